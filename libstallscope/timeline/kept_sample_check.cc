#include "libstallscope/timeline/kept_sample_check.h"

#include <cstdio>
#include <cstdlib>

namespace stallscope {
namespace {

std::string cut_short(const std::string& text) {
    constexpr std::size_t kShown = 200;
    return text.size() <= kShown ? text : text.substr(0, kShown) + "...";
}

// The JSON Pointer of the first place `got` differs from `want` (their dumps differ), and both values
// there: a counter one off in a port of 90 reads as that counter, not as the whole port.
std::string first_difference(const Json& want, const Json& got, const std::string& at) {
    if (want.is_object() && got.is_object() && want.size() == got.size()) {
        for (auto w = want.begin(), g = got.begin(); w != want.end(); ++w, ++g)
            if (w.key() != g.key() || w->dump() != g->dump())
                return w.key() != g.key()
                           ? "'" + at + "': keys '" + w.key() + "' and '" + g.key() + "' differ"
                           : first_difference(*w, *g, at + "/" + w.key());
    } else if (want.is_array() && got.is_array() && want.size() == got.size()) {
        for (std::size_t i = 0; i < want.size(); ++i)
            if (want[i].dump() != got[i].dump())
                return first_difference(want[i], got[i], at + "/" + std::to_string(i));
    }
    return "'" + at + "': the kept sample holds " + cut_short(got.dump()) + " but the tree reads " +
           cut_short(want.dump());
}

}  // namespace

std::string kept_sample_difference(const Json& tree, const Snapshot& kept) {
    std::vector<std::string> problems;
    const Snapshot whole = snapshot_from_json(tree, problems);
    if (!problems.empty()) return "the tree does not read cleanly: " + problems.front();
    // Through to_json, not operator==: -0.0 and 0.0 compare equal but a replayed sample must dump the same.
    const Json want = to_json(whole), got = to_json(kept);
    if (want.dump() == got.dump()) return {};
    return first_difference(want, got, "");
}

std::string reader_state_difference(const Json& tree, Snapshot& kept, const CounterList& keys,
                                    const GaugeList& gauges, std::uint64_t layout, std::uint64_t epoch,
                                    const std::vector<const Counter*>& moving) {
    if (std::string difference = kept_sample_difference(tree, kept); !difference.empty()) return difference;
    for (std::size_t i = 0; i < keys.used; ++i) {
        const bool located = keys.counter_layout[i] == layout;
        if (located && keys.counter[i] != kept_counter(kept, keys.kept[i]))
            return "\"keys\" entry '" + keys.pointers[i] + "' points at another counter than its own";
        if (keys.kept_only[i] == epoch && !located)
            return "\"keys\" entry '" + keys.pointers[i] + "' is kept alone without a current location";
    }
    for (std::size_t i = 0; i < gauges.used; ++i) {
        const bool located = gauges.gauge_layout[i] == layout;
        if (located && gauges.gauge[i] != kept_gauge(kept, gauges.kept[i]))
            return "\"gkeys\" entry '" + gauges.pointers[i] + "' points at another gauge than its own";
        if (gauges.kept_only[i] == epoch && !located && !gauges.is_time[i])
            return "\"gkeys\" entry '" + gauges.pointers[i] + "' is kept alone without a current location";
    }
    std::vector<const Counter*> named;
    kept_counters(kept, {keys.kept.data(), keys.used}, named);
    if (named != moving) return "the moving counters handed out are not the ones \"keys\" names";
    return {};
}

void abort_unless_reader_state(const Json& tree, Snapshot& kept, const CounterList& keys,
                               const GaugeList& gauges, std::uint64_t layout, std::uint64_t epoch,
                               const std::vector<const Counter*>& moving, const std::string& where) {
    const std::string difference = reader_state_difference(tree, kept, keys, gauges, layout, epoch, moving);
    if (difference.empty()) return;
    std::fprintf(stderr, "stallscope: timeline reader invariant broken at %s: %s\n", where.c_str(),
                 difference.c_str());
    std::abort();
}

void abort_unless_oracle_sample(const std::string& oracle_json, const Snapshot& lent,
                                const std::string& where) {
    const Json got = to_json(lent);
    if (got.dump() == oracle_json) return;
    const std::string difference = oracle_json.empty() ? "the oracle handed out no sample"
                                                       : first_difference(Json::parse(oracle_json), got, "");
    std::fprintf(stderr, "stallscope: timeline reader differs from the whole-sample reading at %s: %s\n",
                 where.c_str(), difference.c_str());
    std::abort();
}

}  // namespace stallscope
