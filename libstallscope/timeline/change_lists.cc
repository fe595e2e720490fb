#include "libstallscope/timeline/change_lists.h"

namespace stallscope {

bool CounterList::read(simdjson::dom::array list, std::string& problem) {
    clear();
    const auto bad = [&](std::string what) {
        clear();
        problem = std::move(what);
        return false;
    };
    for (simdjson::dom::element key : list) {
        std::string_view text, from;
        std::uint64_t times = 0;
        simdjson::dom::array entry;
        if (key.get_array().get(entry) == simdjson::SUCCESS) {  // [pointer, factor, source]
            if (entry.size() != 3 || entry.at(0).get_string().get(text) != simdjson::SUCCESS ||
                entry.at(1).get_uint64().get(times) != simdjson::SUCCESS || times == 0 ||
                entry.at(2).get_string().get(from) != simdjson::SUCCESS)
                return bad("\"keys\" holds a derived entry that is not [pointer, factor, source]");
        } else if (key.get_string().get(text) != simdjson::SUCCESS) {
            return bad("\"keys\" holds a non-string");
        }
        if (used == pointers.size()) {
            pointers.emplace_back();
            kept.emplace_back();
            factor.push_back(0);
            source.emplace_back();
            delta.push_back(0);
            nodes.emplace_back();
            counter.push_back(nullptr);
            counter_layout.push_back(0);
            kept_only.push_back(0);
        }
        nodes[used] = {};
        counter_layout[used] = 0;
        kept_only[used] = 0;
        parse_kept_counter(text, kept[used]);
        factor[used] = times;
        source[used].assign(from);
        pointers[used++].assign(text);
        targets.push_back(touch_target(text));
    }
    // A derived entry's source: a plain entry of this list (by index from now on).
    for (std::size_t i = 0; i < used; ++i) {
        if (factor[i] == 0) continue;
        std::size_t j = 0;
        while (j < used && (factor[j] != 0 || pointers[j] != source[i])) ++j;
        if (j == used) return bad("\"keys\": the source of '" + pointers[i] + "' is not a plain entry");
        derived.push_back({i, j});
    }
    return true;
}

bool GaugeList::read(simdjson::dom::array list, std::string& problem) {
    clear();
    for (simdjson::dom::element key : list) {
        std::string_view text;
        if (key.get_string().get(text) != simdjson::SUCCESS) {
            clear();
            problem = "\"gkeys\" holds a non-string";
            return false;
        }
        if (used == pointers.size()) {
            pointers.emplace_back();
            kept.emplace_back();
            nodes.emplace_back();
            is_time.push_back(0);
            gauge.push_back(nullptr);
            gauge_layout.push_back(0);
            kept_only.push_back(0);
        }
        nodes[used] = {};
        is_time[used] = text == "/unix_time";
        gauge_layout[used] = 0;
        kept_only[used] = 0;
        parse_kept_counter(text, kept[used]);
        pointers[used++].assign(text);
        targets.push_back(touch_target(text));
    }
    return true;
}

void KeptOnly::sync(const CounterList& keys, const GaugeList& gauges, const Snapshot& kept,
                    SnapshotDiffDecoder& decoder) {
    if (!tree_behind) return;
    for (std::size_t i = 0; i < keys.used; ++i)
        if (keys.kept_only[i] == epoch)
            keys.nodes[i].node->get_ref<Json::number_unsigned_t&>() = **keys.counter[i];
    for (std::size_t i = 0; i < gauges.used; ++i)
        if (gauges.kept_only[i] == epoch)
            gauges.nodes[i].node->get_ref<Json::number_float_t&>() =
                gauges.is_time[i] ? kept.time : **gauges.gauge[i];
    if (time_behind) decoder.unix_time_moved();
    tree_behind = time_behind = false;
}

}  // namespace stallscope
