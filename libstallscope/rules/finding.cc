#include "libstallscope/rules/finding.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "libstallscope/rules/verdict.h"

namespace stallscope {

Finding make_finding(const RuleDescriptor& rule, Label label, Severity severity, std::string subject,
                     SubjectKind kind, std::string message, Evidence evidence, double score, Hint hint) {
    Finding f;
    f.rule = &rule;
    f.label = label;
    f.severity = severity;
    f.reason.code = rule.code;
    f.reason.category = to_string(rule.category);
    f.reason.severity = to_string(severity);
    f.reason.label = to_string(label);
    f.reason.subject = std::move(subject);
    f.reason.message = std::move(message);
    f.reason.evidence = std::move(evidence);
    f.kind = kind;
    f.score = score;
    f.hint = hint;
    return f;
}

Finding make_finding(const RuleDescriptor& rule, Severity severity, std::string subject, SubjectKind kind,
                     std::string message, Evidence evidence, double score, Hint hint) {
    return make_finding(rule, rule.label, severity, std::move(subject), kind, std::move(message),
                        std::move(evidence), score, hint);
}

Finding& Findings::next_slot() {
    if (size_ == slots_.size()) slots_.emplace_back();
    return slots_[size_++];
}

Finding& Findings::add(const RuleDescriptor& rule, Label label, Severity severity, SubjectKind kind,
                       double score, Hint hint) {
    Finding& f = next_slot();
    Reason& r = f.reason;
    // A slot's strings are those of its typed fields; a fresh slot, or one whose reason was taken, has
    // no rule and writes them all.
    const bool same_rule = f.rule == &rule;
    if (!same_rule) {
        r.code.assign(rule.code);
        r.category.assign(to_string(rule.category));
        f.rule = &rule;
    }
    if (!same_rule || f.label != label) r.label.assign(to_string(label));
    if (!same_rule || f.severity != severity) r.severity.assign(to_string(severity));
    f.label = label;
    f.severity = severity;
    r.subject.clear();
    r.message.clear();
    r.evidence.clear();
    r.first_seen = 0;
    f.kind = kind;
    f.score = score;
    f.hint = hint;
    f.since = 0;
    f.refresh = false;
    f.late.write = nullptr;  // its texts keep their storage; verdict_owner/entry are the verdict's cache
    return f;
}

bool Findings::details_wanted(const Finding& f) const {
    return !verdict_only_ || verdict_only_->wants_details(f);
}

void Findings::push_back(Finding&& f) {
    next_slot() = std::move(f);
}

void add_gpu_evidence(const Gpu& g, Evidence& ev) {
    ev.reserve(kEvidenceEntries);
    ev["gpu_index"] = static_cast<double>(g.index);
    if (!g.uuid.empty()) ev["uuid"] = g.uuid;
    if (!g.pci_bus_id.empty()) ev["pci_bus_id"] = g.pci_bus_id;
}

Evidence gpu_evidence(const Gpu& g) {
    Evidence ev;
    add_gpu_evidence(g, ev);
    return ev;
}

std::string fmt_num(double value) {
    // std::to_chars with a precision writes what printf("%.*f" / "%.*g") writes (the standard says so),
    // without printf's format parsing and locale: this runs for every message of every firing finding,
    // each sample (a throttled GPU on the vm fixture: 6 % of replay in snprintf).
    char buf[400];  // "%.0f" of the largest double: 309 digits and a sign
    const double mag = std::fabs(value);
    if (value == std::floor(value) && mag < 1e15) {
        // Whole numbers (most of them: 100 %, 600 s, 8 GPUs) are their integer's digits, as "%.0f" writes
        // them; the integer conversion costs a tenth of the fixed-precision one.
        if (value == 0) return std::signbit(value) ? "-0" : "0";
        return std::string(buf, std::to_chars(buf, buf + sizeof buf, static_cast<long long>(value)).ptr);
    }
    std::to_chars_result r;
    if (mag >= 100 || value == std::floor(value))
        r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 0);
    else if (mag >= 10)
        r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 1);
    else if (mag >= 0.01)
        r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 2);
    else
        r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, 2);
    // At most 63 characters, as the 64-byte snprintf buffer this replaced cut them (1e63 and beyond).
    std::string s(buf, r.ec == std::errc() ? std::min<std::size_t>(r.ptr - buf, 63) : 0);
    if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}

std::string fmt_duration(double seconds) {
    if (seconds < 100) return fmt_num(std::round(seconds)) + " s";
    if (seconds < 100 * 60) return fmt_num(std::round(seconds / 60)) + " min";
    return fmt_num(std::round(seconds / 360) / 10) + " h";
}

std::string gpu_name(const Gpu& gpu) {
    std::string name;
    gpu_name_into(gpu, name);
    return name;
}

void gpu_name_into(const Gpu& gpu, std::string& out) {
    // Into a kept finding's text sample after sample: written only when it differs.
    if (gpu.index >= 0) {
        char name[64] = "GPU ";
        char* end = std::to_chars(name + 4, name + 24, gpu.index).ptr;
        // A MIG slice carries its parent's index: "GPU 0" would name every slice of the board alike. The
        // slice is named as CUDA's MIG-GPU-<uuid>/<gi>/<ci> and nvidia-smi's GI/CI columns name it.
        if (gpu.mig && gpu.mig->gpu_instance_id) {
            std::memcpy(end, "/GI ", 4);
            end = std::to_chars(end + 4, end + 16, *gpu.mig->gpu_instance_id).ptr;
            if (gpu.mig->compute_instance_id) {
                std::memcpy(end, "/CI ", 4);
                end = std::to_chars(end + 4, end + 16, *gpu.mig->compute_instance_id).ptr;
            }
        }
        assign_if_other(out, std::string_view(name, static_cast<std::size_t>(end - name)));
    } else if (!gpu.uuid.empty()) {
        assign_if_other(out, gpu.uuid);
    } else {
        assign_if_other(out, gpu.pci_bus_id.empty() ? "GPU ?" : gpu.pci_bus_id);
    }
}

std::string_view gpu_key_view(const Gpu& gpu, std::string& buf) {
    if (!gpu.uuid.empty()) return gpu.uuid;
    gpu_key_into(gpu, buf);
    return buf;
}

const DeltaRow* delta_row(const DeltaTable& table, std::string_view entity) {
    auto row = table.find(entity);
    return row == table.end() ? nullptr : &row->second;
}

namespace {

// delta_row, trying first the entry after the one found last: a node lists its ports in the tables'
// (name) order nearly always, so one compare instead of a binary search of the port names.
const DeltaRow* row_after(const DeltaTable& table, std::string_view entity, std::size_t& next) {
    if (next < table.size()) {
        const auto& [name, row] = *(table.begin() + static_cast<std::ptrdiff_t>(next));
        if (name == entity) {
            ++next;
            return &row;
        }
    }
    const auto it = table.find(entity);
    if (it == table.end()) return nullptr;
    next = static_cast<std::size_t>(it - table.begin()) + 1;
    return &it->second;
}

}  // namespace

void port_rows_into(const Snapshot& s, const Rates* rates, std::vector<PortRows>& out) {
    out.resize(s.rdma.size());
    std::size_t next_counters = 0, next_hw = 0, next_netdev = 0;
    for (std::size_t i = 0; i < s.rdma.size(); ++i) {
        const RdmaPort& port = s.rdma[i];
        PortRows& rows = out[i];
        char digits[16];
        const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, port.port);
        rows.key.assign(port.device).append(1, '/').append(digits, end);  // RdmaPort::key(), reusing it
        rows.counters = rates ? row_after(rates->rdma_counters, rows.key, next_counters) : nullptr;
        rows.hw = rates ? row_after(rates->rdma_hw_counters, rows.key, next_hw) : nullptr;
        rows.netdev =
            rates && !port.netdev.empty() ? row_after(rates->interfaces, port.netdev, next_netdev) : nullptr;
    }
}

namespace {

// The row of `entity`, tried first where it was last time (`at`, the index its last lookup found): a
// node's entities and its Rates tables keep their names sample after sample, so one compare of the
// name (same_name) instead of a binary search of the table.
const DeltaRow* row_at(const DeltaTable& table, std::string_view entity, std::size_t& at) {
    if (at < table.size()) {
        const auto& [name, row] = *(table.begin() + static_cast<std::ptrdiff_t>(at));
        if (same_name(name, entity)) return &row;
    }
    const auto it = table.find(entity);
    at = it == table.end() ? table.size() : static_cast<std::size_t>(it - table.begin());
    return it == table.end() ? nullptr : &it->second;
}

}  // namespace

void entity_rows_into(const Snapshot& s, const Rates* rates, EntityRows& out) {
    out.gpus.assign(s.gpus.size(), nullptr);
    out.interfaces.assign(s.interfaces.size(), nullptr);
    out.host = nullptr;
    if (!rates) return;
    out.gpu_at.resize(s.gpus.size());
    out.interface_at.resize(s.interfaces.size());
    std::string key;
    for (std::size_t i = 0; i < s.gpus.size(); ++i)
        out.gpus[i] = row_at(rates->gpus, gpu_key_view(s.gpus[i], key), out.gpu_at[i]);
    for (std::size_t i = 0; i < s.interfaces.size(); ++i)
        out.interfaces[i] = row_at(rates->interfaces, s.interfaces[i].name, out.interface_at[i]);
    out.host = row_at(rates->host, "host", out.host_at);
}

const DeltaRow* gpu_row(const RuleInput& in, std::size_t i) {
    if (in.rows && in.rows->gpus.size() == in.cur.gpus.size()) return in.rows->gpus[i];
    std::string key;
    return in.rates ? delta_row(in.rates->gpus, gpu_key_view(in.cur.gpus[i], key)) : nullptr;
}

const DeltaRow* interface_row(const RuleInput& in, std::size_t i) {
    if (in.rows && in.rows->interfaces.size() == in.cur.interfaces.size()) return in.rows->interfaces[i];
    return in.rates ? delta_row(in.rates->interfaces, in.cur.interfaces[i].name) : nullptr;
}

const DeltaRow* host_row(const RuleInput& in) {
    if (in.rows) return in.rows->host;
    return in.rates ? delta_row(in.rates->host, "host") : nullptr;
}

const std::vector<PortRows>& port_rows(const RuleInput& in, std::vector<PortRows>& local) {
    if (in.ports && in.ports->size() == in.cur.rdma.size()) return *in.ports;
    port_rows_into(in.cur, in.rates, local);
    return local;
}

std::optional<CounterDelta> delta_of(const Rates&, const DeltaTable& table, std::string_view entity,
                                     CounterName counter) {
    return delta_of(delta_row(table, entity), counter);
}

std::optional<double> sum_deltas(const DeltaTable& table, std::string_view entity,
                                 std::initializer_list<CounterName> counters) {
    return sum_deltas(delta_row(table, entity), counters);
}

}  // namespace stallscope
