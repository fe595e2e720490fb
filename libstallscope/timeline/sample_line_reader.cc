// read_sample_line: a sample line parsed straight into a Snapshot, without the nlohmann DOM (which built
// and freed a tree node per counter: most of replay's time). It reads what the helper writes and
// anything else snapshot_from_json reads the same way without a problem; for the rest (invalid JSON,
// wrong types, values snapshot_from_json would warn about, deep nesting) it gives up and the caller
// takes the nlohmann path, so results and warnings stay exactly those of snapshot_from_json.
// Semantics mirrored here, per member: null is absent; for a key given twice the last one wins; unknown
// members are skipped (validated, not built), "summary" and an old timeline's "profile" included.
#include <cstring>
#include <limits>

#include "libstallscope/model/nccl_json.h"
#include "libstallscope/timeline/sample_line.h"
#include "libstallscope/timeline/sample_line_parser.h"

namespace stallscope {
namespace {

using sample_line_detail::GiveUp;
using sample_line_detail::NumberToken;
using sample_line_detail::Parser;

// Reader::number (json_fields.cc): any number, as a double.
double token_double(const NumberToken& t) {
    switch (t.kind) {
        case NumberToken::kUnsigned:
            return static_cast<double>(t.u);
        case NumberToken::kSigned:
            return static_cast<double>(t.i);
        default:
            return t.d;
    }
}

// Reader::u64: an unsigned, or a signed integer >= 0 (only "-0" here); anything else is a problem.
std::uint64_t token_u64(const NumberToken& t) {
    if (t.kind == NumberToken::kUnsigned) return t.u;
    if (t.kind == NumberToken::kSigned && t.i == 0) return 0;
    throw GiveUp{};
}

// Reader::integer (and Reader::string's integer case): a 64-bit integer; giving up where nlohmann would
// wrap an unsigned above INT64_MAX.
std::int64_t token_i64(const NumberToken& t) {
    if (t.kind == NumberToken::kSigned) return t.i;
    if (t.kind == NumberToken::kUnsigned &&
        t.u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return static_cast<std::int64_t>(t.u);
    throw GiveUp{};
}

bool starts_number(char c) {
    return c == '-' || (c >= '0' && c <= '9');
}

// One member of a struct as the snapshot JSON names it: a counter, gauge or string read the same way
// everywhere, or `special` (> 0) for the few the struct's reader handles itself.
template <typename S>
struct Member {
    std::string_view name;
    Counter S::*counter = nullptr;
    Gauge S::*gauge = nullptr;
    std::string S::*text = nullptr;
    int special = 0;
};

// Finds members by name, trying first the one after the last found: the tables below list members in
// the order the writer (and to_json) writes them, so a helper's line costs one comparison per member.
template <typename S, std::size_t N>
class Members {
  public:
    explicit Members(const Member<S> (&table)[N]) : table_(table) {}
    const Member<S>* find(std::string_view key) {
        if (next_ < N && table_[next_].name == key) return &table_[next_++];
        for (std::size_t i = 0; i < N; ++i)
            if (table_[i].name == key) {
                next_ = i + 1;
                return &table_[i];
            }
        return nullptr;
    }

  private:
    const Member<S> (&table_)[N];
    std::size_t next_ = 0;
};

enum Special {
    kPause = 1,
    kPort,
    kCounters,
    kHwCounters,
    kIndex,
    kMinor,
    kThrottleReasons,
    kXid,
    kPsi,
    kGpus,
    kVisibleDevices,
    kCode,
    kGpuIndex
};

constexpr Member<NetInterface> kInterfaceMembers[] = {
    {.name = "name", .text = &NetInterface::name},
    {.name = "rx_bytes", .counter = &NetInterface::rx_bytes},
    {.name = "rx_packets", .counter = &NetInterface::rx_packets},
    {.name = "rx_errors", .counter = &NetInterface::rx_errors},
    {.name = "rx_dropped", .counter = &NetInterface::rx_dropped},
    {.name = "rx_fifo", .counter = &NetInterface::rx_fifo},
    {.name = "rx_frame", .counter = &NetInterface::rx_frame},
    {.name = "rx_compressed", .counter = &NetInterface::rx_compressed},
    {.name = "rx_multicast", .counter = &NetInterface::rx_multicast},
    {.name = "tx_bytes", .counter = &NetInterface::tx_bytes},
    {.name = "tx_packets", .counter = &NetInterface::tx_packets},
    {.name = "tx_errors", .counter = &NetInterface::tx_errors},
    {.name = "tx_dropped", .counter = &NetInterface::tx_dropped},
    {.name = "tx_fifo", .counter = &NetInterface::tx_fifo},
    {.name = "tx_colls", .counter = &NetInterface::tx_colls},
    {.name = "tx_carrier", .counter = &NetInterface::tx_carrier},
    {.name = "tx_compressed", .counter = &NetInterface::tx_compressed},
    {.name = "pause", .special = kPause},
};
constexpr Member<RdmaPort> kRdmaMembers[] = {
    {.name = "device", .text = &RdmaPort::device},
    {.name = "port", .special = kPort},
    {.name = "state", .text = &RdmaPort::state},
    {.name = "phys_state", .text = &RdmaPort::phys_state},
    {.name = "rate_gbps", .gauge = &RdmaPort::rate_gbps},
    {.name = "link_layer", .text = &RdmaPort::link_layer},
    {.name = "netdev", .text = &RdmaPort::netdev},
    {.name = "rx_bytes", .counter = &RdmaPort::rx_bytes},
    {.name = "tx_bytes", .counter = &RdmaPort::tx_bytes},
    {.name = "counters", .special = kCounters},
    {.name = "hw_counters", .special = kHwCounters},
};
constexpr Member<Gpu> kGpuMembers[] = {
    {.name = "index", .special = kIndex},
    {.name = "uuid", .text = &Gpu::uuid},
    {.name = "pci_bus_id", .text = &Gpu::pci_bus_id},
    {.name = "name", .text = &Gpu::name},
    {.name = "vendor", .text = &Gpu::vendor},
    {.name = "minor_number", .special = kMinor},
    {.name = "utilization_pct", .gauge = &Gpu::utilization_pct},
    {.name = "memory_used_bytes", .counter = &Gpu::memory_used_bytes},
    {.name = "memory_total_bytes", .counter = &Gpu::memory_total_bytes},
    {.name = "temperature_c", .gauge = &Gpu::temperature_c},
    {.name = "power_w", .gauge = &Gpu::power_w},
    {.name = "power_limit_w", .gauge = &Gpu::power_limit_w},
    {.name = "sm_clock_mhz", .counter = &Gpu::sm_clock_mhz},
    {.name = "max_sm_clock_mhz", .counter = &Gpu::max_sm_clock_mhz},
    {.name = "throttle_reasons_mask", .counter = &Gpu::throttle_reasons_mask},
    {.name = "throttle_reasons", .special = kThrottleReasons},
    {.name = "violation_power_ns", .counter = &Gpu::violation_power_ns},
    {.name = "violation_thermal_ns", .counter = &Gpu::violation_thermal_ns},
    {.name = "ecc_uncorrected", .counter = &Gpu::ecc_uncorrected},
    {.name = "ecc_corrected", .counter = &Gpu::ecc_corrected},
    {.name = "remapped_rows_pending", .counter = &Gpu::remapped_rows_pending},
    {.name = "remapped_rows_failure", .counter = &Gpu::remapped_rows_failure},
    {.name = "energy_mj", .counter = &Gpu::energy_mj},
    {.name = "xid", .special = kXid},
};
constexpr Member<XidEvent> kXidEventMembers[] = {
    {.name = "code", .special = kCode},
    {.name = "pci_bus_id", .text = &XidEvent::pci_bus_id},
    {.name = "gpu_index", .special = kGpuIndex},
    {.name = "severity", .text = &XidEvent::severity},
    {.name = "message", .text = &XidEvent::message},
};
constexpr Member<Psi> kPsiMembers[] = {
    {.name = "cpu_some_avg10", .gauge = &Psi::cpu_some_avg10},
    {.name = "cpu_some_avg60", .gauge = &Psi::cpu_some_avg60},
    {.name = "io_some_avg10", .gauge = &Psi::io_some_avg10},
    {.name = "io_some_avg60", .gauge = &Psi::io_some_avg60},
    {.name = "io_full_avg10", .gauge = &Psi::io_full_avg10},
    {.name = "io_full_avg60", .gauge = &Psi::io_full_avg60},
    {.name = "memory_some_avg10", .gauge = &Psi::memory_some_avg10},
    {.name = "memory_some_avg60", .gauge = &Psi::memory_some_avg60},
    {.name = "memory_full_avg10", .gauge = &Psi::memory_full_avg10},
    {.name = "memory_full_avg60", .gauge = &Psi::memory_full_avg60},
    {.name = "cpu_some_total_us", .counter = &Psi::cpu_some_total_us},
    {.name = "io_some_total_us", .counter = &Psi::io_some_total_us},
    {.name = "io_full_total_us", .counter = &Psi::io_full_total_us},
    {.name = "memory_some_total_us", .counter = &Psi::memory_some_total_us},
    {.name = "memory_full_total_us", .counter = &Psi::memory_full_total_us},
};
constexpr Member<HostStats> kHostMembers[] = {
    {.name = "load1", .gauge = &HostStats::load1},
    {.name = "load5", .gauge = &HostStats::load5},
    {.name = "load15", .gauge = &HostStats::load15},
    {.name = "mem_total_bytes", .counter = &HostStats::mem_total_bytes},
    {.name = "mem_available_bytes", .counter = &HostStats::mem_available_bytes},
    {.name = "procs_running", .counter = &HostStats::procs_running},
    {.name = "procs_blocked", .counter = &HostStats::procs_blocked},
    {.name = "oom_kills", .counter = &HostStats::oom_kills},
    {.name = "psi", .special = kPsi},
};
constexpr Member<JobContext> kContextMembers[] = {
    {.name = "scheduler", .text = &JobContext::scheduler},
    {.name = "job_id", .text = &JobContext::job_id},
    {.name = "step_id", .text = &JobContext::step_id},
    {.name = "job_name", .text = &JobContext::job_name},
    {.name = "user", .text = &JobContext::user},
    {.name = "nodelist", .text = &JobContext::nodelist},
    {.name = "node_id", .text = &JobContext::node_id},
    {.name = "gpus", .special = kGpus},
    {.name = "visible_devices", .special = kVisibleDevices},
    {.name = "pod", .text = &JobContext::pod},
    {.name = "namespace", .text = &JobContext::namespace_name},
};

class SnapshotReader {
  public:
    explicit SnapshotReader(std::string_view line) : p_(line) {}

    void read(Snapshot& s) {
        s = Snapshot{};
        std::string type, schema, time_text;
        std::optional<double> unix_time;
        enum { kNoTime, kTimeNumber, kTimeText } time_kind = kNoTime;
        double time_number = 0;
        p_.begin_object();
        bool first = true;
        std::string_view key;
        while (p_.next_key(first, key)) {
            if (key == "type") {
                if (p_.peek() != '"') throw GiveUp{};
                p_.string(type);
                if (type != "sample") throw GiveUp{};  // header, event, verdict: the Json path
            } else if (key == "schema") {
                schema.clear();  // not a string: as if absent (string_member)
                if (p_.peek() == '"')
                    p_.string(schema);
                else
                    p_.skip();
            } else if (key == "unix_time") {
                gauge(unix_time);
            } else if (key == "time") {
                const char c = p_.peek();
                if (c == '"') {
                    p_.string(time_text);
                    time_kind = kTimeText;
                } else if (starts_number(c)) {
                    time_number = token_double(p_.number());
                    time_kind = kTimeNumber;
                } else {
                    p_.skip();  // null or another type: ignored
                    time_kind = kNoTime;
                }
            } else if (key == "host") {
                string(s.host);
            } else if (key == "context") {
                context(s.context);
            } else if (key == "host_stats") {
                host_stats(s.host_stats);
            } else if (key == "interfaces") {
                objects(s.interfaces, [this](NetInterface& i) { interface(i); });
            } else if (key == "rdma") {
                objects(s.rdma, [this](RdmaPort& r) { rdma(r); });
            } else if (key == "gpus") {
                objects(s.gpus, [this](Gpu& g) { gpu(g); });
            } else if (key == "xid_events") {
                objects(s.xid_events, [this](XidEvent& e) { xid_event(e); });
            } else if (key == "nccl") {
                nccl(s.nccl);
            } else if (key == "collector_failures") {
                collector_failures(s.collector_failures);
            } else if (key == "warnings") {
                strings(s.warnings);
            } else {
                p_.skip();  // "summary", an old timeline's "profile", --json output's "rates", newer keys
            }
        }
        if (!p_.at_end()) throw GiveUp{};
        if (type != "sample" && schema != kSnapshotSchema) throw GiveUp{};
        if (unix_time) {
            s.time = *unix_time;
        } else if (time_kind == kTimeNumber) {
            s.time = time_number;
        } else if (time_kind == kTimeText) {
            const auto t = parse_rfc3339(time_text);
            if (!t) throw GiveUp{};  // a problem for snapshot_from_json to word
            s.time = *t;
        }
    }

  private:
    void counter(Counter& out) {
        if (p_.null()) return out.reset();
        if (!starts_number(p_.peek())) throw GiveUp{};
        out = token_u64(p_.number());
    }
    void gauge(Gauge& out) {
        if (p_.null()) return out.reset();
        if (!starts_number(p_.peek())) throw GiveUp{};
        out = token_double(p_.number());
    }
    std::optional<std::int64_t> integer() {
        if (p_.null()) return std::nullopt;
        if (!starts_number(p_.peek())) throw GiveUp{};
        return token_i64(p_.number());
    }
    void string(std::string& out) {
        const char c = p_.peek();
        if (c == '"') return p_.string(out);
        if (p_.null()) return out.clear();
        if (!starts_number(c)) throw GiveUp{};
        out = std::to_string(token_i64(p_.number()));  // "job_id": 42
    }
    // Reader::strings: strings and integers kept, other items dropped silently.
    void strings(std::vector<std::string>& out) {
        out.clear();
        if (p_.null()) return;
        p_.begin_array();
        bool first = true;
        while (p_.next_item(first)) {
            const char c = p_.peek();
            if (c == '"') {
                p_.string(out.emplace_back());
            } else if (starts_number(c)) {
                const NumberToken t = p_.number();
                if (t.kind != NumberToken::kFloat) out.push_back(std::to_string(token_i64(t)));
            } else {
                p_.skip();
            }
        }
    }
    void counters(CounterMap& out) {
        out.clear();
        if (p_.null()) return;
        if (p_.peek() != '{') throw GiveUp{};
        p_.begin_object();
        bool first = true;
        std::string_view key;
        while (p_.next_key(first, key)) {
            // (Reader looks counters up by C string: a name with a NUL in it is not found there.)
            if (key.find('\0') != std::string_view::npos) throw GiveUp{};
            std::string name(key);
            Counter value;
            counter(value);
            out.insert_or_assign(out.end(), std::move(name), value);  // written sorted: O(1) at the end
        }
    }
    template <typename T, typename F>
    void objects(std::vector<T>& out, F read_one) {
        out.clear();
        if (p_.null()) return;
        p_.begin_array();
        bool first = true;
        while (p_.next_item(first)) {
            if (p_.peek() != '{') throw GiveUp{};
            read_one(out.emplace_back());
        }
    }
    // Reads an object member by member with `on_key(key)`; anything but an object (null included) makes
    // the target its default, as snapshot_from_json ignores a non-object there.
    template <typename F>
    bool object(F on_key) {
        if (p_.peek() != '{') {
            p_.skip();
            return false;
        }
        p_.begin_object();
        bool first = true;
        std::string_view key;
        while (p_.next_key(first, key)) on_key(key);
        return true;
    }

    // Reads an object of S member by member: plain members by their table, the rest by `special(m)`.
    template <typename S, std::size_t N, typename F>
    bool members(S& target, const Member<S> (&table)[N], F special) {
        Members<S, N> names(table);
        return object([&](std::string_view key) {
            const Member<S>* m = names.find(key);
            if (!m)
                p_.skip();
            else if (m->counter)
                counter(target.*(m->counter));
            else if (m->gauge)
                gauge(target.*(m->gauge));
            else if (m->text)
                string(target.*(m->text));
            else
                special(m->special);
        });
    }

    void context(JobContext& out) {
        JobContext c;
        c.scheduler.clear();
        const bool read =
            members(c, kContextMembers, [&](int m) { strings(m == kGpus ? c.gpus : c.visible_devices); });
        if (!read) c = JobContext{};
        if (c.scheduler.empty()) c.scheduler = "none";
        out = std::move(c);
    }
    void host_stats(HostStats& out) {
        HostStats h;
        members(h, kHostMembers, [&](int) {
            Psi psi;
            members(psi, kPsiMembers, [](int) {});
            h.psi = psi;
        });
        out = h;
    }
    void interface(NetInterface& i) {
        members(i, kInterfaceMembers, [&](int) { counters(i.pause); });
    }
    void rdma(RdmaPort& r) {
        members(r, kRdmaMembers, [&](int m) {
            if (m == kPort)
                r.port = static_cast<int>(integer().value_or(0));
            else
                counters(m == kCounters ? r.counters : r.hw_counters);
        });
    }
    void gpu(Gpu& g) {
        members(g, kGpuMembers, [&](int m) {
            switch (m) {
                case kIndex:
                    g.index = static_cast<int>(integer().value_or(-1));
                    break;
                case kMinor:
                    minor_number(g.minor_number);
                    break;
                case kThrottleReasons:
                    strings(g.throttle_reasons);
                    break;
                default:
                    xid_codes(g.xid);
                    break;
            }
        });
    }
    void minor_number(std::optional<int>& out) {
        if (const auto m = integer())
            out = static_cast<int>(*m);
        else
            out.reset();
    }
    // Reader: integer items kept (as nlohmann's get<int> converts them), other items and a non-array
    // dropped silently.
    void xid_codes(std::vector<int>& out) {
        out.clear();
        if (p_.peek() != '[') return p_.skip();
        p_.begin_array();
        bool first = true;
        while (p_.next_item(first)) {
            if (!starts_number(p_.peek())) {
                p_.skip();
                continue;
            }
            const NumberToken t = p_.number();
            if (t.kind == NumberToken::kUnsigned)
                out.push_back(static_cast<int>(t.u));
            else if (t.kind == NumberToken::kSigned)
                out.push_back(static_cast<int>(t.i));
            // else: a float to nlohmann (also an integer beyond 64 bits): dropped
        }
    }
    void xid_event(XidEvent& e) {
        members(e, kXidEventMembers, [&](int m) {
            if (m == kCode)
                e.code = static_cast<int>(integer().value_or(0));
            else
                e.gpu_index = static_cast<int>(integer().value_or(-1));
        });
    }
    // Rare and intricate: handed to nlohmann and nccl_from_json as they are, giving up on any problem.
    void nccl(NcclState& out) {
        out = NcclState{};
        if (p_.peek() != '{') return p_.skip();
        const char* start = p_.value_start();
        p_.skip();
        const Json j = Json::parse(start, p_.position(), nullptr, false);
        if (!j.is_object()) throw GiveUp{};
        std::vector<std::string> problems;
        out = nccl_from_json(j, problems);
        if (!problems.empty()) throw GiveUp{};
    }
    void collector_failures(std::map<std::string, std::string>& out) {
        out.clear();
        object([&](std::string_view key) {
            std::string name(key);
            if (p_.peek() != '"') throw GiveUp{};  // Reader dumps a non-string: rare, left to it
            p_.string(out[name]);
        });
    }

    Parser p_;
};

}  // namespace

bool read_sample_line(std::string_view line, Snapshot& out) {
    try {
        SnapshotReader(line).read(out);
        return true;
    } catch (const GiveUp&) {
        return false;
    }
}

}  // namespace stallscope
