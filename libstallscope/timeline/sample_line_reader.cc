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

template <typename S, typename M>
struct Field {
    std::string_view name;
    M S::*member;
};

constexpr Field<NetInterface, Counter> kInterfaceCounters[] = {
    {"rx_bytes", &NetInterface::rx_bytes},
    {"rx_packets", &NetInterface::rx_packets},
    {"rx_errors", &NetInterface::rx_errors},
    {"rx_dropped", &NetInterface::rx_dropped},
    {"rx_fifo", &NetInterface::rx_fifo},
    {"rx_frame", &NetInterface::rx_frame},
    {"rx_compressed", &NetInterface::rx_compressed},
    {"rx_multicast", &NetInterface::rx_multicast},
    {"tx_bytes", &NetInterface::tx_bytes},
    {"tx_packets", &NetInterface::tx_packets},
    {"tx_errors", &NetInterface::tx_errors},
    {"tx_dropped", &NetInterface::tx_dropped},
    {"tx_fifo", &NetInterface::tx_fifo},
    {"tx_colls", &NetInterface::tx_colls},
    {"tx_carrier", &NetInterface::tx_carrier},
    {"tx_compressed", &NetInterface::tx_compressed},
};
constexpr Field<Gpu, Counter> kGpuCounters[] = {
    {"memory_used_bytes", &Gpu::memory_used_bytes},
    {"memory_total_bytes", &Gpu::memory_total_bytes},
    {"sm_clock_mhz", &Gpu::sm_clock_mhz},
    {"max_sm_clock_mhz", &Gpu::max_sm_clock_mhz},
    {"throttle_reasons_mask", &Gpu::throttle_reasons_mask},
    {"violation_power_ns", &Gpu::violation_power_ns},
    {"violation_thermal_ns", &Gpu::violation_thermal_ns},
    {"ecc_uncorrected", &Gpu::ecc_uncorrected},
    {"ecc_corrected", &Gpu::ecc_corrected},
    {"remapped_rows_pending", &Gpu::remapped_rows_pending},
    {"remapped_rows_failure", &Gpu::remapped_rows_failure},
    {"energy_mj", &Gpu::energy_mj},
};
constexpr Field<Gpu, Gauge> kGpuGauges[] = {
    {"utilization_pct", &Gpu::utilization_pct},
    {"temperature_c", &Gpu::temperature_c},
    {"power_w", &Gpu::power_w},
    {"power_limit_w", &Gpu::power_limit_w},
};
constexpr Field<Gpu, std::string> kGpuStrings[] = {
    {"uuid", &Gpu::uuid}, {"pci_bus_id", &Gpu::pci_bus_id}, {"name", &Gpu::name}, {"vendor", &Gpu::vendor}};
constexpr Field<Psi, Gauge> kPsiGauges[] = {
    {"cpu_some_avg10", &Psi::cpu_some_avg10},       {"cpu_some_avg60", &Psi::cpu_some_avg60},
    {"io_some_avg10", &Psi::io_some_avg10},         {"io_some_avg60", &Psi::io_some_avg60},
    {"io_full_avg10", &Psi::io_full_avg10},         {"io_full_avg60", &Psi::io_full_avg60},
    {"memory_some_avg10", &Psi::memory_some_avg10}, {"memory_some_avg60", &Psi::memory_some_avg60},
    {"memory_full_avg10", &Psi::memory_full_avg10}, {"memory_full_avg60", &Psi::memory_full_avg60},
};
constexpr Field<Psi, Counter> kPsiCounters[] = {
    {"cpu_some_total_us", &Psi::cpu_some_total_us},
    {"io_some_total_us", &Psi::io_some_total_us},
    {"io_full_total_us", &Psi::io_full_total_us},
    {"memory_some_total_us", &Psi::memory_some_total_us},
    {"memory_full_total_us", &Psi::memory_full_total_us},
};
constexpr Field<HostStats, Gauge> kHostGauges[] = {
    {"load1", &HostStats::load1}, {"load5", &HostStats::load5}, {"load15", &HostStats::load15}};
constexpr Field<HostStats, Counter> kHostCounters[] = {
    {"mem_total_bytes", &HostStats::mem_total_bytes},
    {"mem_available_bytes", &HostStats::mem_available_bytes},
    {"procs_running", &HostStats::procs_running},
    {"procs_blocked", &HostStats::procs_blocked},
    {"oom_kills", &HostStats::oom_kills},
};
constexpr Field<JobContext, std::string> kContextStrings[] = {
    {"scheduler", &JobContext::scheduler},
    {"job_id", &JobContext::job_id},
    {"step_id", &JobContext::step_id},
    {"job_name", &JobContext::job_name},
    {"user", &JobContext::user},
    {"nodelist", &JobContext::nodelist},
    {"node_id", &JobContext::node_id},
    {"pod", &JobContext::pod},
    {"namespace", &JobContext::namespace_name},
};

// The member of `object` named `key` in `table`, nullptr when the table has none.
template <typename S, typename M, std::size_t N>
M* member(S& object, const Field<S, M> (&table)[N], std::string_view key) {
    for (const auto& f : table)
        if (f.name == key) return &(object.*f.member);
    return nullptr;
}

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

    void context(JobContext& out) {
        JobContext c;
        c.scheduler.clear();
        const bool read = object([&](std::string_view key) {
            if (auto* m = member(c, kContextStrings, key))
                string(*m);
            else if (key == "gpus")
                strings(c.gpus);
            else if (key == "visible_devices")
                strings(c.visible_devices);
            else
                p_.skip();
        });
        if (!read) c = JobContext{};
        if (c.scheduler.empty()) c.scheduler = "none";
        out = std::move(c);
    }
    void psi(Psi& out) {
        Psi p;
        object([&](std::string_view key) {
            if (auto* g = member(p, kPsiGauges, key))
                gauge(*g);
            else if (auto* c = member(p, kPsiCounters, key))
                counter(*c);
            else
                p_.skip();
        });
        out = p;
    }
    void host_stats(HostStats& out) {
        HostStats h;
        object([&](std::string_view key) {
            if (auto* g = member(h, kHostGauges, key))
                gauge(*g);
            else if (auto* c = member(h, kHostCounters, key))
                counter(*c);
            else if (key == "psi")
                psi(h.psi);
            else
                p_.skip();
        });
        out = h;
    }
    void interface(NetInterface& i) {
        object([&](std::string_view key) {
            if (auto* c = member(i, kInterfaceCounters, key))
                counter(*c);
            else if (key == "name")
                string(i.name);
            else if (key == "pause")
                counters(i.pause);
            else
                p_.skip();
        });
    }
    void rdma(RdmaPort& r) {
        object([&](std::string_view key) {
            if (key == "counters")
                counters(r.counters);
            else if (key == "hw_counters")
                counters(r.hw_counters);
            else if (key == "device")
                string(r.device);
            else if (key == "port")
                r.port = static_cast<int>(integer().value_or(0));
            else if (key == "state")
                string(r.state);
            else if (key == "phys_state")
                string(r.phys_state);
            else if (key == "rate_gbps")
                gauge(r.rate_gbps);
            else if (key == "link_layer")
                string(r.link_layer);
            else if (key == "netdev")
                string(r.netdev);
            else if (key == "rx_bytes")
                counter(r.rx_bytes);
            else if (key == "tx_bytes")
                counter(r.tx_bytes);
            else
                p_.skip();
        });
    }
    void gpu(Gpu& g) {
        object([&](std::string_view key) {
            if (auto* c = member(g, kGpuCounters, key))
                counter(*c);
            else if (auto* ga = member(g, kGpuGauges, key))
                gauge(*ga);
            else if (auto* st = member(g, kGpuStrings, key))
                string(*st);
            else if (key == "index")
                g.index = static_cast<int>(integer().value_or(-1));
            else if (key == "minor_number")
                minor_number(g.minor_number);
            else if (key == "throttle_reasons")
                strings(g.throttle_reasons);
            else if (key == "xid")
                xid_codes(g.xid);
            else
                p_.skip();
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
        object([&](std::string_view key) {
            if (key == "code")
                e.code = static_cast<int>(integer().value_or(0));
            else if (key == "pci_bus_id")
                string(e.pci_bus_id);
            else if (key == "gpu_index")
                e.gpu_index = static_cast<int>(integer().value_or(-1));
            else if (key == "severity")
                string(e.severity);
            else if (key == "message")
                string(e.message);
            else
                p_.skip();
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
