#include "libstallscope/hang/flight_recorder.h"

#include <algorithm>
#include <charconv>

#include "libstallscope/model/json_fields.h"

namespace stallscope {
namespace {

// A dump with more groups than this is not a training job's (a PG per layer is ~100): the rest are named in
// a warning instead of slowing every lookup.
constexpr std::size_t kMaxGroups = 512;

std::string text_or(PickleRef v, std::string_view fallback = {}) {
    if (auto t = v.as_text()) return std::string(t->substr(0, 256));
    return std::string(fallback);
}

std::optional<std::int64_t> status_value(PickleRef v) {
    const auto i = v.as_int();
    if (!i || *i < 0) return std::nullopt;  // -1: not tracked (TORCH_NCCL_ENABLE_TIMING off for "started")
    return i;
}

class GroupTable {
  public:
    explicit GroupTable(std::vector<FlightRecorderGroup>& groups, std::vector<std::string>& warnings)
        : groups_(groups), warnings_(warnings) {}

    FlightRecorderGroup* by_name(const std::string& name) {
        for (auto& g : groups_)
            if (g.name == name) return &g;
        if (groups_.size() >= kMaxGroups) {
            if (!dropped_++) warnings_.push_back("more than 512 process groups: the rest ignored");
            return nullptr;
        }
        groups_.push_back(FlightRecorderGroup{});
        groups_.back().name = name;
        return &groups_.back();
    }
    FlightRecorderGroup* by_pg_id(const std::string& pg_id) {
        for (auto& g : groups_)
            if (g.pg_id == pg_id) return &g;
        FlightRecorderGroup* g = by_name(pg_id);  // the default group: name "0", uid 0
        if (g && g->pg_id.empty()) g->pg_id = pg_id;
        return g;
    }

  private:
    std::vector<FlightRecorderGroup>& groups_;
    std::vector<std::string>& warnings_;
    int dropped_ = 0;
};

struct Derived {  // pg_status as the entries imply it, for dumps that predate pg_status
    std::optional<std::int64_t> enqueued, started, completed;
};

void raise(std::optional<std::int64_t>& slot, std::int64_t v) {
    if (!slot || *slot < v) slot = v;
}

FlightRecorderEntry read_entry(PickleRef e) {
    FlightRecorderEntry out;
    out.record_id = e.get("record_id").as_int().value_or(-1);
    out.collective_seq_id = e.get("collective_seq_id").as_int().value_or(-1);
    out.p2p_seq_id = e.get("p2p_seq_id").as_int().value_or(-1);
    out.op_id = e.get("op_id").as_int().value_or(-1);
    out.profiling_name = text_or(e.get("profiling_name"));
    out.state = text_or(e.get("state"));
    out.time_created_ns = e.get("time_created_ns").as_int().value_or(0);
    out.is_p2p = e.get("is_p2p").as_bool().value_or(false);
    if (auto sizes = e.get("input_sizes")) out.input_sizes = sizes.repr(120);
    const PickleRef dtypes = e.get("input_dtypes");
    for (std::size_t i = 0; i < dtypes.size() && out.input_dtypes.size() < 120; ++i) {
        if (i) out.input_dtypes += ',';
        out.input_dtypes += text_or(dtypes.at(i), "?");
    }
    return out;
}

}  // namespace

const FlightRecorderGroup* FlightRecorderDump::group(std::string_view name) const {
    for (const auto& g : groups)
        if (g.name == name) return &g;
    return nullptr;
}

const FlightRecorderEntry* FlightRecorderDump::entry(std::string_view name, std::int64_t seq) const {
    const FlightRecorderGroup* g = group(name);
    if (!g) return nullptr;
    for (const auto& e : g->newest)
        if (e.collective_seq_id == seq) return &e;
    return nullptr;
}

bool read_flight_recorder_dump(std::string_view bytes, FlightRecorderDump& out,
                               std::vector<std::string>& warnings, std::string& error,
                               const PickleLimits& limits) {
    out = FlightRecorderDump{};
    PickleDocument doc;
    if (!parse_pickle(bytes, doc, error, limits)) return false;
    const PickleRef root = root_of(doc);
    if (!root.is_dict()) {
        error = "flight recorder: the pickle is not a dict";
        return false;
    }
    out.version = text_or(root.get("version"));
    out.comm_lib_version = text_or(root.get("comm_lib_version"), text_or(root.get("nccl_version")));
    if (out.version.empty()) warnings.push_back("flight recorder: no version key");
    GroupTable table(out.groups, warnings);

    const PickleRef config = root.get("pg_config");
    for (std::size_t i = 0; i < config.size(); ++i) {
        const std::string name = text_or(config.key_at(i));
        const PickleRef info = config.value_at(i);
        FlightRecorderGroup* g = name.empty() ? nullptr : table.by_name(name);
        if (!g) continue;
        g->desc = text_or(info.get("desc"));
        const PickleRef ranks = info.get("ranks");
        g->ranks = ranks.as_text() ? text_or(ranks) : ranks.repr(4096);  // a str in 2.x, a list in 1.x
    }

    std::vector<Derived> derived;
    const PickleRef entries = root.get("entries");
    if (!entries.is_sequence()) warnings.push_back("flight recorder: no entries list");
    out.entries = entries.size();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const PickleRef e = entries.at(i);
        if (!e.is_dict()) continue;
        const auto pg_id = e.get("pg_id").as_int();
        const PickleRef pg = e.get("process_group");
        std::string name = text_or(pg.at(0));
        if (name.empty() && pg_id) name = std::to_string(*pg_id);
        if (name.empty()) continue;
        FlightRecorderGroup* g = table.by_name(name);
        if (!g) continue;
        if (g->pg_id.empty() && pg_id) g->pg_id = std::to_string(*pg_id);
        if (g->desc.empty()) g->desc = text_or(pg.at(1));
        FlightRecorderEntry entry = read_entry(e);
        const auto index = static_cast<std::size_t>(g - out.groups.data());
        if (derived.size() <= index) derived.resize(index + 1);
        if (!entry.is_p2p && entry.collective_seq_id >= 0) {
            raise(derived[index].enqueued, entry.collective_seq_id);
            if (entry.state == "started" || entry.state == "completed")
                raise(derived[index].started, entry.collective_seq_id);
            if (entry.state == "completed") raise(derived[index].completed, entry.collective_seq_id);
            g->newest.push_back(std::move(entry));
            if (g->newest.size() > kNewestEntriesPerGroup) g->newest.erase(g->newest.begin());
        }
    }

    const PickleRef status = root.get("pg_status");
    std::vector<bool> has_status(out.groups.size(), false);
    for (std::size_t i = 0; i < status.size(); ++i) {
        const PickleRef key = status.key_at(i);
        const std::string pg_id = key.as_text() ? text_or(key) : key.repr(32);
        FlightRecorderGroup* g = table.by_pg_id(pg_id);
        if (!g) continue;
        const PickleRef s = status.value_at(i);
        g->last_enqueued = status_value(s.get("last_enqueued_collective"));
        g->last_started = status_value(s.get("last_started_collective"));
        g->last_completed = status_value(s.get("last_completed_collective"));
        const auto index = static_cast<std::size_t>(g - out.groups.data());
        if (has_status.size() <= index) has_status.resize(index + 1, false);
        has_status[index] = true;
    }
    for (std::size_t i = 0; i < out.groups.size(); ++i) {
        if (i < has_status.size() && has_status[i]) continue;
        if (i >= derived.size() || !derived[i].enqueued) continue;
        auto& g = out.groups[i];
        g.last_enqueued = derived[i].enqueued;
        g.last_started = derived[i].started;
        g.last_completed = derived[i].completed;
        g.status_from_entries = true;
    }
    return true;
}

std::vector<int> parse_rank_list(std::string_view text, std::size_t max_ranks) {
    std::vector<int> ranks;
    std::size_t i = 0;
    while (i < text.size() && ranks.size() < max_ranks) {
        if (text[i] < '0' || text[i] > '9') {
            if (text[i] != '[' && text[i] != ']' && text[i] != ',' && text[i] != ' ') return {};
            ++i;
            continue;
        }
        int v = 0;
        const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
        if (ec != std::errc()) return {};
        ranks.push_back(v);
        i = static_cast<std::size_t>(end - text.data());
    }
    return ranks;
}

namespace {

Json entry_json(const FlightRecorderEntry& e) {
    Json j = json_fields::object_of(9);
    json_fields::put(j, "record_id", e.record_id);
    json_fields::put(j, "collective_seq_id", e.collective_seq_id);
    json_fields::put(j, "p2p_seq_id", e.p2p_seq_id);
    json_fields::put(j, "op_id", e.op_id);
    json_fields::put(j, "profiling_name", e.profiling_name);
    json_fields::put(j, "state", e.state);
    json_fields::put(j, "input_sizes", e.input_sizes);
    json_fields::put(j, "input_dtypes", e.input_dtypes);
    json_fields::put(j, "time_created_ns", e.time_created_ns);
    json_fields::put(j, "is_p2p", e.is_p2p);
    return j;
}

std::optional<std::int64_t> optional_int(const json_fields::Reader& r, const char* key) {
    return r.integer(key);
}

}  // namespace

Json to_json(const FlightRecorderDump& dump) {
    Json groups = Json::array();
    for (const auto& g : dump.groups) {
        Json newest = Json::array();
        for (const auto& e : g.newest) newest.push_back(entry_json(e));
        Json j = json_fields::object_of(10);
        json_fields::put(j, "name", g.name);
        json_fields::put(j, "desc", g.desc);
        json_fields::put(j, "pg_id", g.pg_id);
        json_fields::put(j, "ranks", g.ranks);
        json_fields::put(j, "last_enqueued_collective", json_fields::or_null(g.last_enqueued));
        json_fields::put(j, "last_started_collective", json_fields::or_null(g.last_started));
        json_fields::put(j, "last_completed_collective", json_fields::or_null(g.last_completed));
        json_fields::put(j, "status_from_entries", g.status_from_entries);
        json_fields::put(j, "newest", std::move(newest));
        groups.push_back(std::move(j));
    }
    Json j = json_fields::object_of(5);
    json_fields::put(j, "rank", dump.rank);
    json_fields::put(j, "version", dump.version);
    json_fields::put(j, "comm_lib_version", dump.comm_lib_version);
    json_fields::put(j, "entries", dump.entries);
    json_fields::put(j, "groups", std::move(groups));
    return j;
}

FlightRecorderDump flight_recorder_from_json(const Json& object, std::vector<std::string>& problems) {
    FlightRecorderDump d;
    if (!object.is_object()) {
        problems.push_back("flight_recorder: not an object");
        return d;
    }
    const json_fields::Reader r{object, problems, "flight_recorder"};
    d.rank = static_cast<int>(r.integer("rank").value_or(-1));
    d.version = r.string("version");
    d.comm_lib_version = r.string("comm_lib_version");
    d.entries = static_cast<std::size_t>(r.u64("entries").value_or(0));
    d.groups = r.objects<FlightRecorderGroup>("groups", [](const json_fields::Reader& g) {
        FlightRecorderGroup out;
        out.name = g.string("name");
        out.desc = g.string("desc");
        out.pg_id = g.string("pg_id");
        out.ranks = g.string("ranks");
        out.last_enqueued = optional_int(g, "last_enqueued_collective");
        out.last_started = optional_int(g, "last_started_collective");
        out.last_completed = optional_int(g, "last_completed_collective");
        if (const Json* v = g.find("status_from_entries"); v && v->is_boolean())
            out.status_from_entries = v->get<bool>();
        out.newest = g.objects<FlightRecorderEntry>("newest", [](const json_fields::Reader& e) {
            FlightRecorderEntry x;
            x.record_id = e.integer("record_id").value_or(-1);
            x.collective_seq_id = e.integer("collective_seq_id").value_or(-1);
            x.p2p_seq_id = e.integer("p2p_seq_id").value_or(-1);
            x.op_id = e.integer("op_id").value_or(-1);
            x.profiling_name = e.string("profiling_name");
            x.state = e.string("state");
            x.input_sizes = e.string("input_sizes");
            x.input_dtypes = e.string("input_dtypes");
            x.time_created_ns = e.integer("time_created_ns").value_or(0);
            if (const Json* v = e.find("is_p2p"); v && v->is_boolean()) x.is_p2p = v->get<bool>();
            return x;
        });
        return out;
    });
    return d;
}

}  // namespace stallscope
