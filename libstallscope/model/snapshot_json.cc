#include "libstallscope/model/snapshot_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <type_traits>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"

namespace stallscope {
namespace {

using json_fields::or_null;
using json_fields::put;
using json_fields::Reader;

Json counters(const CounterMap& m) {
    Json o = json_fields::object_of(m.size());
    for (const auto& [k, v] : m) put(o, k, or_null(v));
    return o;
}

// A counter map's value; a wrong type is a problem named like Reader::wrong_type would name it, with
// the "<where>.<key>" prefix built only then (re-reading a port must not allocate).
std::optional<std::uint64_t> counter_value(const Reader& r, const char* key, const std::string& name,
                                           const Json& value) {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::uint64_t>();
    if (!value.is_null())
        r.problems.push_back((r.where.empty() ? std::string(key) : r.where + "." + key) + "." + name +
                             ": expected an unsigned integer");
    return std::nullopt;
}

// Into `m`: when the object holds the same names as `m` already does (the same port, one second
// later), only the values are assigned, so re-reading a sample allocates nothing. Each item's value is
// read directly (a find per key would search the object again).
void read_counters(const Reader& r, const char* key, CounterMap& m) {
    const Json* v = r.find(key);
    if (!v || !v->is_object()) {
        if (v) r.wrong_type(key, "an object of counters");
        m.clear();
        return;
    }
    const Json::object_t::Container& items = v->get_ref<const Json::object_t&>();  // indexable
    bool same_names = items.size() == m.size();
    auto it = m.begin();
    for (std::size_t i = 0; same_names && i < items.size(); ++i, ++it)
        same_names = it->first == items[i].first;
    if (same_names) {
        it = m.begin();
        for (const auto& [name, value] : items) (it++)->second = counter_value(r, key, name, value);
        return;
    }
    m.clear();
    for (const auto& [name, value] : items)
        m.insert_or_assign(m.end(), name, counter_value(r, key, name, value));
}

// The tree writer and reader of a described struct (fields.h), member by member in its order: to_json's
// key order, what snapshot_from_json reads back.
template <fields::Described T>
Json object_json(const T& object);

template <class V>
Json value_json(const V& v) {
    if constexpr (std::is_same_v<V, CounterMap>)
        return counters(v);
    else if constexpr (fields::Described<V>)
        return object_json(v);
    else if constexpr (fields::is_part_list<V>) {
        Json a = Json::array();
        for (const auto& item : v) a.push_back(object_json(item));
        return a;
    } else if constexpr (fields::is_optional<V>)
        return or_null(v);
    else
        return Json(v);
}

template <fields::Described T>
Json object_json(const T& object) {
    Json o = json_fields::object_of(fields::field_count<T>);
    fields::for_each_field<T>([&](const auto& f) {
        const auto& v = fields::member_of(f, object);
        if constexpr (fields::is_optional_part<std::remove_cvref_t<decltype(v)>>) {
            if (v) put(o, f.key, value_json(*v));
        } else {
            put(o, f.key, value_json(v));
        }
    });
    return o;
}

// The value a member has in a default-constructed struct: what an absent or mistyped integer reads as.
template <auto Member>
const auto& default_value() {
    static const auto value = typename fields::MemberOf<Member>::owner{}.*Member;
    return value;
}

template <fields::Described T>
void read_object(const Reader& r, T& object);

// `key`'s object read into `part` (a default one when absent; a non-object is a problem).
template <fields::Described P>
bool read_part(const Reader& r, const char* key, P& part) {
    const Json* v = r.find(key);
    if (!v) return false;
    if (!v->is_object()) {
        r.wrong_type(key, "an object");
        return false;
    }
    read_object(Reader{*v, r.problems, r.where.empty() ? std::string(key) : r.where + "." + key}, part);
    return true;
}

// An optional part: absent or null leaves it empty (not measured); a list of parts reads each object.
template <fields::Described P>
void read_optional_part(const Reader& r, const char* key, std::optional<P>& part) {
    part.emplace();
    if (!read_part(r, key, *part)) part.reset();
}
template <fields::Described P>
void read_optional_part(const Reader& r, const char* key, std::optional<std::vector<P>>& list) {
    list.reset();  // reading into an element read before (the timeline reader's kept sample)
    if (const Json* a = r.find(key); a && a->is_array())
        list = r.objects<P>(key, [](const Reader& e) {
            P item;
            read_object(e, item);
            return item;
        });
    else if (a)
        r.wrong_type(key, "an array");
}

template <auto Member, class V>
void read_value(const Reader& r, const char* key, V& v) {
    if constexpr (std::is_same_v<V, Counter>) {
        v = r.u64(key);
    } else if constexpr (std::is_same_v<V, Gauge>) {
        v = r.number(key);
    } else if constexpr (std::is_same_v<V, std::string>) {
        v = r.string(key);
    } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
        v = r.strings(key);
    } else if constexpr (std::is_same_v<V, CounterMap>) {
        read_counters(r, key, v);
    } else if constexpr (std::is_same_v<V, int> || std::is_same_v<V, std::int64_t>) {
        v = static_cast<V>(r.integer(key).value_or(default_value<Member>()));
    } else if constexpr (std::is_same_v<V, std::optional<int>>) {
        v.reset();
        if (auto n = r.integer(key)) v = static_cast<int>(*n);
    } else if constexpr (std::is_same_v<V, std::optional<std::uint32_t>>) {
        v.reset();
        if (auto n = r.u64(key); n && *n <= 0xffffffffULL) v = static_cast<std::uint32_t>(*n);
    } else if constexpr (std::is_same_v<V, bool>) {
        const Json* b = r.find(key);
        v = b && b->is_boolean() ? b->get<bool>() : default_value<Member>();
    } else if constexpr (std::is_same_v<V, std::vector<int>>) {
        v.clear();
        if (const Json* x = r.find(key); x && x->is_array())
            for (const auto& item : *x)
                if (item.is_number_integer()) v.push_back(item.get<int>());
    } else if constexpr (fields::Described<V>) {
        v = V{};
        read_part(r, key, v);
    } else if constexpr (fields::is_optional_part<V>) {
        read_optional_part(r, key, v);
    } else {
        static_assert(sizeof(V) == 0, "a member type the JSON reader does not know");
    }
}

// Assigns every member (reading into an element read before reuses its maps' storage).
template <fields::Described T>
void read_object(const Reader& r, T& object) {
    fields::for_each_field<T>([&](const auto& f) {
        read_value<std::remove_cvref_t<decltype(f)>::member>(r, f.key, fields::member_of(f, object));
    });
}

// A fresh element read from `r` (the element readers of read_snapshot_element read into the last one).
template <fields::Described T>
T read_fresh(const Reader& r) {
    T t;
    read_object(r, t);
    return t;
}

template <typename T, typename F>
Json array_of(const std::vector<T>& items, F to_json_one) {
    Json a = Json::array();
    a.get_ref<Json::array_t&>().reserve(items.size());
    for (const auto& item : items) a.push_back(to_json_one(item));
    return a;
}

double read_time(const Reader& r) {
    if (auto unix_time = r.number("unix_time")) return *unix_time;
    const Json* time_field = r.find("time");
    if (time_field && time_field->is_number()) return time_field->get<double>();
    if (time_field && time_field->is_string()) {
        if (auto parsed = parse_rfc3339(time_field->get<std::string>())) return *parsed;
        r.problems.push_back("time: not RFC 3339");
    }
    return 0;
}

JobContext read_context(const Reader& cr) {
    JobContext c = read_fresh<JobContext>(cr);
    if (c.scheduler.empty()) c.scheduler = "none";
    return c;
}

// The object under `key`, or null when absent or not an object (snapshot_from_json's leniency).
const Json* object_at(const Reader& r, const char* key) {
    const Json* v = r.find(key);
    return v && v->is_object() ? v : nullptr;
}

}  // namespace

Json host_stats_to_json(const HostStats& h) {
    return object_json(h);
}

Json job_cgroup_to_json(const JobCgroup& c) {
    return object_json(c);
}

Json context_to_json(const JobContext& c) {
    return object_json(c);
}
Json interface_to_json(const NetInterface& i) {
    return object_json(i);
}
Json rdma_port_to_json(const RdmaPort& p) {
    return object_json(p);
}
Json gpu_to_json(const Gpu& g) {
    return object_json(g);
}
Json xid_events_to_json(const std::vector<XidEvent>& events) {
    return array_of(events, object_json<XidEvent>);
}

Json collector_failures_to_json(const std::map<std::string, std::string>& failures) {
    Json o = json_fields::object_of(failures.size());
    for (const auto& [k, v] : failures) put(o, k, v);
    return o;
}

Json to_json(const Snapshot& s) {
    // The key order here is the timeline's: SnapshotDiffEncoder walks the same parts in the same order.
    Json o = json_fields::object_of(16);
    put(o, "schema", kSnapshotSchema);
    put(o, "time", format_rfc3339(s.time));
    put(o, "unix_time", s.time);
    put(o, "host", s.host);
    put(o, "context", object_json(s.context));
    put(o, "host_stats", host_stats_to_json(s.host_stats));
    put(o, "interfaces", array_of(s.interfaces, object_json<NetInterface>));
    put(o, "rdma", array_of(s.rdma, object_json<RdmaPort>));
    put(o, "gpus", array_of(s.gpus, object_json<Gpu>));
    put(o, "xid_events", xid_events_to_json(s.xid_events));
    if (!s.nccl.empty()) put(o, "nccl", nccl_to_json(s.nccl));
    if (s.job_cgroup) put(o, "job_cgroup", job_cgroup_to_json(*s.job_cgroup));
    put(o, "collector_failures", collector_failures_to_json(s.collector_failures));
    put(o, "warnings", s.warnings);
    return o;
}

SnapshotField snapshot_field(std::string_view key) {
    static constexpr std::pair<std::string_view, SnapshotField> kKeys[] = {
        {"time", SnapshotField::time},
        {"unix_time", SnapshotField::time},
        {"host", SnapshotField::host},
        {"context", SnapshotField::context},
        {"host_stats", SnapshotField::host_stats},
        {"interfaces", SnapshotField::interfaces},
        {"rdma", SnapshotField::rdma},
        {"gpus", SnapshotField::gpus},
        {"xid_events", SnapshotField::xid_events},
        {"nccl", SnapshotField::nccl},
        {"job_cgroup", SnapshotField::job_cgroup},
        {"collector_failures", SnapshotField::collector_failures},
        {"warnings", SnapshotField::warnings},
        {"schema", SnapshotField::none},
    };
    for (const auto& [name, field] : kKeys)
        if (name == key) return field;
    return SnapshotField::none;  // a newer writer's key: snapshot_from_json ignores it too
}

void read_snapshot_field(const Json& object, SnapshotField field, Snapshot& s,
                         std::vector<std::string>& problems) {
    const Reader r{object, problems, ""};
    switch (field) {
        case SnapshotField::none:
            return;
        case SnapshotField::time:
            s.time = read_time(r);
            return;
        case SnapshotField::host:
            s.host = r.string("host");
            return;
        case SnapshotField::context:
            if (const Json* c = object_at(r, "context"))
                s.context = read_context(Reader{*c, problems, "context"});
            else
                s.context = JobContext{};
            return;
        case SnapshotField::host_stats:
            if (const Json* h = object_at(r, "host_stats"))
                s.host_stats = read_fresh<HostStats>(Reader{*h, problems, "host_stats"});
            else
                s.host_stats = HostStats{};
            return;
        case SnapshotField::interfaces:
            s.interfaces = r.objects<NetInterface>("interfaces", read_fresh<NetInterface>);
            return;
        case SnapshotField::rdma:
            s.rdma = r.objects<RdmaPort>("rdma", read_fresh<RdmaPort>);
            return;
        case SnapshotField::gpus:
            s.gpus = r.objects<Gpu>("gpus", read_fresh<Gpu>);
            return;
        case SnapshotField::xid_events:
            s.xid_events = r.objects<XidEvent>("xid_events", read_fresh<XidEvent>);
            return;
        case SnapshotField::nccl:
            if (const Json* n = object_at(r, "nccl"))
                s.nccl = nccl_from_json(*n, problems);
            else
                s.nccl = NcclState{};
            return;
        case SnapshotField::job_cgroup:
            if (const Json* c = object_at(r, "job_cgroup"))
                s.job_cgroup = read_fresh<JobCgroup>(Reader{*c, problems, "job_cgroup"});
            else
                s.job_cgroup.reset();
            return;
        case SnapshotField::collector_failures:
            s.collector_failures.clear();
            if (const Json* f = object_at(r, "collector_failures"))
                for (auto it = f->begin(); it != f->end(); ++it)
                    s.collector_failures[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
            return;
        case SnapshotField::warnings:
            s.warnings = r.strings("warnings");
            return;
    }
}

bool read_snapshot_element(const Json& object, SnapshotField field, std::size_t index, Snapshot& s,
                           std::vector<std::string>& problems) {
    const Reader r{object, problems, ""};
    const char* key = field == SnapshotField::interfaces ? "interfaces"
                      : field == SnapshotField::rdma     ? "rdma"
                      : field == SnapshotField::gpus     ? "gpus"
                                                         : nullptr;
    const Json* array = key ? r.find(key) : nullptr;
    if (!array || !array->is_array() || index >= array->size() || !(*array)[index].is_object()) return false;
    const std::size_t size = field == SnapshotField::interfaces ? s.interfaces.size()
                             : field == SnapshotField::rdma     ? s.rdma.size()
                                                                : s.gpus.size();
    if (size != array->size()) return false;  // a skipped element: indices do not line up
    const Reader inner{(*array)[index], problems, std::string(key) + "[" + std::to_string(index) + "]"};
    if (field == SnapshotField::interfaces)
        read_object(inner, s.interfaces[index]);
    else if (field == SnapshotField::rdma)
        read_object(inner, s.rdma[index]);
    else
        read_object(inner, s.gpus[index]);
    return true;
}

Snapshot snapshot_from_json(const Json& object, std::vector<std::string>& problems) {
    Snapshot s;
    for (int f = 0; f < static_cast<int>(SnapshotField::count); ++f)
        read_snapshot_field(object, static_cast<SnapshotField>(f), s, problems);
    return s;
}

}  // namespace stallscope
