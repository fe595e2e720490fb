// What a rule sees (RuleInput) and what it produces (Finding): the small shared vocabulary of every
// rule in libstallscope/rules. A rule is a free function or a small class with `evaluate(in, out)`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/rules/rule_descriptor.h"
#include "libstallscope/rules/thresholds.h"
#include "libstallscope/rules/vocabulary.h"
#include "libstallscope/util/same_name.h"

namespace stallscope {

// What a reason is about, so the verdict can name the worst GPU / port / interface.
enum class SubjectKind { kGpu, kPort, kInterface, kHost, kOther };

class NcclPeerNames;

// An RDMA port of the sample with its rows in Rates (nullptr: none), resolved once per sample by the
// profiler for all the fabric rules: a key string and three lookups per port, not per port per rule.
struct PortRows {
    std::string key;                     // RdmaPort::key()
    const DeltaRow* counters = nullptr;  // rates->rdma_counters
    const DeltaRow* hw = nullptr;        // rates->rdma_hw_counters
    const DeltaRow* netdev = nullptr;    // rates->interfaces, the port's netdev
};

// Fills `out` with one PortRows per port of `s`, in its order (reusing out's strings).
void port_rows_into(const Snapshot& s, const Rates* rates, std::vector<PortRows>& out);

// The rows in Rates of the sample's GPUs (by gpu_key) and interfaces (by name), in the sample's order
// (nullptr: none), and the host's: resolved once per sample by the profiler for the rules that read
// their deltas, where each rule's own lookup was a binary search of names (5 % of a vm replay).
struct EntityRows {
    std::vector<const DeltaRow*> gpus;        // rates->gpus
    std::vector<const DeltaRow*> interfaces;  // rates->interfaces
    const DeltaRow* host = nullptr;           // rates->host, "host"
    // Where each was found in its table last time: tried first (entity_rows_into).
    std::vector<std::size_t> gpu_at, interface_at;
    std::size_t host_at = 0;
};

// Fills `out` for `s` (every row nullptr without rates), reusing its storage.
void entity_rows_into(const Snapshot& s, const Rates* rates, EntityRows& out);

struct RuleInput {
    const Snapshot& cur;
    // The previous sample when the profiler kept it (nullptr on the first sample, and always after
    // Profiler::observe_view): rules judge change through `rates`, never through this.
    const Snapshot* prev;
    const Rates* rates;  // nullptr on the first sample: delta rules stay silent
    const Thresholds& t;
    const NcclPeerNames* peer_names = nullptr;  // host names of NCCL peers learned so far (the Profiler's)
    // cur's RDMA port counters, flat (RatesTracker::rdma_values: each port's counters then hw_counters,
    // in port and name order) when the profiler has them; otherwise rules walk the ports' maps.
    std::optional<std::span<const Counter>> rdma_values = std::nullopt;
    // port_rows_into(cur, rates) when the profiler has it; port_rows() resolves it otherwise.
    const std::vector<PortRows>* ports = nullptr;
    // entity_rows_into(cur, rates) when the profiler has it; gpu_row() etc. look rows up otherwise.
    const EntityRows* rows = nullptr;
    // Per GPU of cur, in its order: a small number for its key, the same all run (GpuSlots), when the
    // profiler has them; PerGpu looks GPUs up by key otherwise.
    const std::vector<std::uint32_t>* gpu_slots = nullptr;
};

// The Rates row of in.cur.gpus[i], of in.cur.interfaces[i], of the host: nullptr without rates or row.
const DeltaRow* gpu_row(const RuleInput& in, std::size_t i);
const DeltaRow* interface_row(const RuleInput& in, std::size_t i);
const DeltaRow* host_row(const RuleInput& in);

// The rows of in.cur.rdma, port by port: the profiler's, or resolved into `local`.
const std::vector<PortRows>& port_rows(const RuleInput& in, std::vector<PortRows>& local);

class VerdictAccumulator;
struct VerdictEntry;

// A refreshing finding's message and evidence as the numbers and texts they are written from, and the
// function that writes them. The step verdict keeps only the last sample's (Finding::refresh), so in
// replay's verdict-only pass a rule that refreshes every sample (a throttled GPU) hands these over
// instead, and the verdict writes the text once, when it is built (the rule's message and evidence were
// 14 % of a vm replay). The rule writes them through the same function when they are wanted at once.
// Its fields are those of the one finding that defers today, a share of a window of samples (the HW
// slowdown kinds of gpu_window_rules.cc, per GPU or node-wide); a rule that defers others adds its own.
struct LateDetails {
    // Writes r.message and r.evidence (r's code and subject are the finding's); nullptr: nothing late.
    void (*write)(const LateDetails& d, Reason& r) = nullptr;
    std::size_t kind = 0;        // which condition, in the rule's own table
    double share = 0;            // of the window it held; node-wide: the smallest of the GPUs'
    double window_seconds = 0;   // what the window holds
    double window_setting = 0;   // how long the window grows (the threshold's seconds)
    double threshold_share = 0;  // the share at which it fires
    int gpu_index = -1;          // per GPU
    Counter sm_clock_mhz;        // per GPU, when measured
    Gauge power_w;               // per GPU, when measured
    std::size_t gpus_affected = 0, gpus_total = 0;  // node-wide
    std::string gpu_name, gpu_uuid;                 // per GPU

    // *this = other, each text written only where it differs: the verdict keeps the latest of a finding
    // that refreshes every sample, and its texts (a GPU's name and uuid) are the same every time.
    void assign_from(const LateDetails& other) {
        write = other.write;
        kind = other.kind;
        share = other.share;
        window_seconds = other.window_seconds;
        window_setting = other.window_setting;
        threshold_share = other.threshold_share;
        gpu_index = other.gpu_index;
        sm_clock_mhz = other.sm_clock_mhz;
        power_w = other.power_w;
        gpus_affected = other.gpus_affected;
        gpus_total = other.gpus_total;
        assign_if_other(gpu_name, other.gpu_name);
        assign_if_other(gpu_uuid, other.gpu_uuid);
    }
};

struct Finding {
    // reason.code, category, severity and label are the model's strings of `rule`, `label` and `severity`
    // (written by Findings::add and make_finding): the rules, the profiler and the verdict read the typed
    // fields, the JSON and text writers the strings.
    Reason reason;
    const RuleDescriptor* rule = nullptr;
    Label label = Label::kFast;
    Severity severity = Severity::kInfo;
    SubjectKind kind = SubjectKind::kOther;
    double score = 1;  // value / threshold (>= 1 when it fired): ranks worst samples, drives confidence
    Hint hint = Hint::kNone;
    double since = 0;  // windowed rules: when the condition began (0 = this sample)
    // The message describes the condition so far ("in 80 % of the last 40 s"): the step summary keeps
    // the latest message instead of the first one, which described only the first interval.
    bool refresh = false;
    // Set (write != nullptr) instead of message and evidence when a refreshing finding's details were
    // not wanted (Findings::details_wanted): the verdict writes them from these when it is built.
    LateDetails late;
    // The step verdict's entry for this finding's reason when this slot last fired: a kept slot fires for
    // the same reason sample after sample. VerdictAccumulator's cache: used only by the accumulator whose
    // id it names (ids are never reused, not even by a copy) and checked against the code and subject.
    mutable std::uint64_t verdict_owner = 0;
    mutable const VerdictEntry* verdict_entry = nullptr;

    // Moves the reason out (into a Profile); the slot writes all its strings again on its next add().
    Reason take_reason() {
        rule = nullptr;
        return std::move(reason);
    }
};

// The findings of one sample, in the order the rules add them. clear() keeps every Finding it held, with
// the storage of its strings and evidence table: a rule that fires every sample (a GPU throttled or with a
// row remap pending: every second of a days-long job) writes into a kept slot through add(), where a
// Finding built whole (make_finding) allocated its code, subject, message and evidence anew each time
// (~7 allocations a GPU finding; two such rules were a third of the vm bench's replay). What add() still
// allocates: evidence values that are long strings (a uuid), as the emptied table's entries are new.
// Rules that fire rarely may keep push_back(make_finding(...)).
class Findings {
  public:
    // The next finding of `rule`, at the rule's label or at `label`: its fixed fields set, subject and
    // message empty, evidence empty, since 0, refresh false; the rule writes the rest. The reference is
    // good until the next add() or push_back().
    // The reason's strings are written when the slot's rule, label or severity changes: a kept slot holds
    // the same finding sample after sample, and rewriting its four strings was 5 % of a vm replay.
    Finding& add(const RuleDescriptor& rule, Severity severity, SubjectKind kind, double score = 1,
                 Hint hint = Hint::kNone) {
        return add(rule, rule.label, severity, kind, score, hint);
    }
    Finding& add(const RuleDescriptor& rule, Label label, Severity severity, SubjectKind kind,
                 double score = 1, Hint hint = Hint::kNone);
    void push_back(Finding&& f);  // a finding built whole
    void clear() { size_ = 0; }   // the findings' storage stays for the next sample

    // Whether `f`'s message and evidence will be read. Replay's verdict-only pass
    // (Profiler::observe_view_for_verdict) hands the findings to the step verdict alone, which keeps them
    // only when a reason first fires, beats its worst score or refreshes (VerdictAccumulator); a rule
    // that fires every sample of a days-long job asks, once the finding's subject, score and refresh are
    // final, and writes neither when the answer is no. A refreshing finding (f.refresh) is then wanted
    // only when it first fires: a rule that refreshes must fill f.late and write its details through
    // it when they are wanted, and leave f.late set when they are not. Always true outside that pass.
    bool details_wanted(const Finding& f) const;
    void set_verdict_only(const VerdictAccumulator* verdict) { verdict_only_ = verdict; }

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Finding& operator[](std::size_t i) { return slots_[i]; }
    const Finding& operator[](std::size_t i) const { return slots_[i]; }
    Finding& front() { return slots_[0]; }
    const Finding& front() const { return slots_[0]; }
    Finding& back() { return slots_[size_ - 1]; }
    const Finding& back() const { return slots_[size_ - 1]; }
    Finding* begin() { return slots_.data(); }
    Finding* end() { return slots_.data() + size_; }
    const Finding* begin() const { return slots_.data(); }
    const Finding* end() const { return slots_.data() + size_; }

  private:
    Finding& next_slot();
    std::vector<Finding> slots_;  // [0, size_) this sample's; the rest kept for their storage
    std::size_t size_ = 0;
    const VerdictAccumulator* verdict_only_ = nullptr;
};

// Appends each part (std::string, string view, C string) to `out`: a message written into a Finding's
// kept storage, without the temporaries of a chain of operator+.
template <class... Parts>
void append_parts(std::string& out, const Parts&... parts) {
    (out.append(std::string_view(parts)), ...);
}

// Room for the entries a rule's evidence usually holds: the helpers that start one (a GPU's ids, a job's
// cgroup) reserve it, so the entries the rule adds after them do not move the others.
inline constexpr std::size_t kEvidenceEntries = 8;

// A GPU's ids (index, uuid, PCI bus id when known), room reserved for what the rule adds.
Evidence gpu_evidence(const Gpu& g);
// The same ids added to `ev` (a Findings slot's evidence, emptied by add()).
void add_gpu_evidence(const Gpu& g, Evidence& ev);

// Builds a finding of `rule`, pushing towards the rule's label or towards `label`.
Finding make_finding(const RuleDescriptor& rule, Severity severity, std::string subject, SubjectKind kind,
                     std::string message, Evidence evidence, double score = 1, Hint hint = Hint::kNone);
Finding make_finding(const RuleDescriptor& rule, Label label, Severity severity, std::string subject,
                     SubjectKind kind, std::string message, Evidence evidence, double score = 1,
                     Hint hint = Hint::kNone);

// Numbers in messages: 1250, 12.5, 0.25 (no trailing zeros, no exponent for ordinary values).
std::string fmt_num(double value);

// Durations in messages: "15 s", "5 min", "1.5 h".
std::string fmt_duration(double seconds);

// "GPU 3" (index known) or the uuid / bus id; for messages.
std::string gpu_name(const Gpu& gpu);
// The same written into `out` (its storage reused).
void gpu_name_into(const Gpu& gpu, std::string& out);

// gpu_key(gpu) without building a string: a view of the uuid, or of "gpu<index>" written into `buf`.
// Valid while `gpu` and `buf` are; for per-sample lookups in the rules' per-GPU state.
std::string_view gpu_key_view(const Gpu& gpu, std::string& buf);

// The entry for `key` in a map with a transparent comparator, inserted (value-initialised) when
// missing: a lookup by view that allocates only the first time a key is seen.
template <class Map>
typename Map::mapped_type& entry(Map& map, std::string_view key) {
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
    return it->second;
}

// The delta of one counter in a Rates table, or nullopt. A counter that went down (reset: driver reload,
// port reset, another device behind the same name) is treated as missing for that interval: what it
// holds after a reset cannot be placed in time, and judging it would be judging a lifetime total.
// Counters are named by CounterName (a string literal checked and indexed at compile time, rates.h).
std::optional<CounterDelta> delta_of(const Rates& rates, const DeltaTable& table, std::string_view entity,
                                     CounterName counter);
// The same in a row already found (nullptr: none). Inline, as sum_deltas below: called a hundred times
// a sample on a big node.
inline std::optional<CounterDelta> delta_of(const DeltaRow* row, CounterName counter) {
    const CounterDelta* d = row ? row->cell(counter) : nullptr;
    if (!d || d->reset) return std::nullopt;
    return *d;
}
// The row of `entity` in `table`, nullptr when it has none.
const DeltaRow* delta_row(const DeltaTable& table, std::string_view entity);
// Sum of the deltas of the named counters that exist (nullopt when none of them exists).
std::optional<double> sum_deltas(const DeltaTable& table, std::string_view entity,
                                 std::initializer_list<CounterName> counters);
inline std::optional<double> sum_deltas(const DeltaRow* row, std::initializer_list<CounterName> counters) {
    // Summed in a plain double: building the optional in memory as it went made the caller's read of
    // it stall on store forwarding (half of this function's time in perf).
    double sum = 0;
    bool any = false;
    if (row)
        for (const CounterName name : counters)
            if (const CounterDelta* d = row->cell(name); d && !d->reset)
                sum += static_cast<double>(d->delta), any = true;
    return any ? std::optional<double>(sum) : std::nullopt;
}

// Per-entity state by key (a GPU's key: GpuSlots below), for a caller that looks each entity of the sample
// up once per sample, in the sample's order: entries in first-seen order, and the entry after the last one
// looked up tried first, so the steady case is one key compare (same_name) where a std::map took a descent
// of string compares (memcmp calls). Entries are never removed (as the maps
// they replace, nothing erased them); a reference is valid until the next lookup of a new key.
template <class T>
class KeyedState {
  public:
    T& operator[](std::string_view key) {
        const std::size_t n = items_.size();
        if (n > 0) {
            const std::size_t next = last_ + 1 < n ? last_ + 1 : 0;
            for (std::size_t i = next, tried = 0; tried < n; ++tried, i = i + 1 < n ? i + 1 : 0)
                if (same_name(items_[i].first, key)) {
                    last_ = i;
                    return items_[i].second;
                }
        }
        items_.emplace_back(std::string(key), T{});
        last_ = items_.size() - 1;
        return items_.back().second;
    }
    std::size_t size() const { return items_.size(); }

  private:
    std::vector<std::pair<std::string, T>> items_;
    std::size_t last_ = 0;
};

// Numbers 0, 1, 2, ... for GPU keys in the order first seen: the profiler gives each GPU of a sample its
// number once (assign), and every rule that keeps per-GPU state indexes a vector with it (PerGpu), where
// each looked the GPU's key up itself (five lookups of a 40-byte uuid per GPU per sample).
class GpuSlots {
  public:
    std::uint32_t slot(std::string_view key) {
        std::uint32_t& id = ids_[key];  // 0: a key not seen before
        if (id == 0) id = ++count_;
        return id - 1;
    }
    // slots() becomes those of s.gpus, in its order.
    void assign(const Snapshot& s) {
        slots_.resize(s.gpus.size());
        for (std::size_t i = 0; i < s.gpus.size(); ++i) slots_[i] = slot(gpu_key_view(s.gpus[i], key_));
    }
    const std::vector<std::uint32_t>& slots() const { return slots_; }

  private:
    KeyedState<std::uint32_t> ids_;
    std::uint32_t count_ = 0;
    std::vector<std::uint32_t> slots_;
    std::string key_;
};

// A rule's state per GPU, by its slot: the profiler's (RuleInput::gpu_slots), or its own numbering by
// key when the rule runs without them (a test). One rule instance sees one or the other all along.
template <class T>
class PerGpu {
  public:
    // The state of in.cur.gpus[i], value-initialised the first time its GPU is seen.
    T& at(const RuleInput& in, std::size_t i) {
        const std::uint32_t slot = in.gpu_slots && in.gpu_slots->size() == in.cur.gpus.size()
                                       ? (*in.gpu_slots)[i]
                                       : own_.slot(gpu_key_view(in.cur.gpus[i], key_));
        if (slot >= items_.size()) items_.resize(slot + 1);
        return items_[slot];
    }

  private:
    std::vector<T> items_;
    GpuSlots own_;
    std::string key_;
};

}  // namespace stallscope
