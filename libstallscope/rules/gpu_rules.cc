#include "libstallscope/rules/gpu_rules.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace stallscope {
namespace {

bool in_list(int code, std::initializer_list<int> codes) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
}

}  // namespace

void gpu_low_utilization_rule(const RuleInput& in, Findings& out) {
    double sum = 0;
    int n = 0;
    for (const auto& g : in.cur.gpus)
        if (g.utilization_pct) sum += *g.utilization_pct, ++n;
    if (n == 0) return;
    const double mean = sum / n;
    if (mean >= in.t.gpu_util_low_pct) return;
    // An under-fed job's GPUs are under-fed all day: written into a kept slot (Findings::add).
    Finding& f = out.add(rule::kGpuLowUtilization, Severity::kWarning, SubjectKind::kOther,
                         in.t.gpu_util_low_pct / std::max(mean, 1.0));
    f.reason.subject.assign("gpus");
    if (!out.details_wanted(f)) return;
    append_parts(f.reason.message, "mean GPU utilization ", fmt_num(mean), " % over ", std::to_string(n),
                 " GPU(s) (threshold ", fmt_num(in.t.gpu_util_low_pct),
                 " %) — the GPUs are waiting on input, the host or communication");
    Evidence& ev = f.reason.evidence;
    ev["mean_utilization_pct"] = mean;
    ev["gpus"] = static_cast<double>(n);
    ev["threshold_pct"] = in.t.gpu_util_low_pct;
}

void gpu_memory_high_rule(const RuleInput& in, Findings& out) {
    for (const auto& g : in.cur.gpus) {
        if (!g.memory_used_bytes || !g.memory_total_bytes || *g.memory_total_bytes == 0) continue;
        const double pct =
            static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes) * 100;
        if (pct < in.t.gpu_memory_high_pct) continue;
        Finding& f = out.add(rule::kGpuMemoryHigh, Severity::kWarning, SubjectKind::kGpu,
                             pct / std::max(in.t.gpu_memory_high_pct, 1e-9), Hint::kMemory);
        gpu_key_into(g, f.reason.subject);
        if (!out.details_wanted(f)) continue;
        append_parts(f.reason.message, gpu_name(g), ": ", fmt_num(pct), " % of GPU memory in use (threshold ",
                     fmt_num(in.t.gpu_memory_high_pct), " %) — one allocation away from CUDA OOM");
        add_gpu_evidence(g, f.reason.evidence);
        f.reason.evidence["memory_used_pct"] = pct;
        f.reason.evidence["threshold_pct"] = in.t.gpu_memory_high_pct;
    }
}

void gpu_temperature_rule(const RuleInput& in, Findings& out) {
    for (const auto& g : in.cur.gpus) {
        if (!g.temperature_c || *g.temperature_c < in.t.gpu_temp_warn_c) continue;
        Finding& f = out.add(rule::kGpuTemperatureHigh, Severity::kWarning, SubjectKind::kGpu,
                             *g.temperature_c / std::max(in.t.gpu_temp_warn_c, 1e-9), Hint::kCompute);
        gpu_key_into(g, f.reason.subject);
        if (!out.details_wanted(f)) continue;
        append_parts(f.reason.message, gpu_name(g), ": ", fmt_num(*g.temperature_c), " °C (threshold ",
                     fmt_num(in.t.gpu_temp_warn_c), " °C) — close to hardware thermal slowdown");
        add_gpu_evidence(g, f.reason.evidence);
        f.reason.evidence["temperature_c"] = *g.temperature_c;
        f.reason.evidence["threshold_c"] = in.t.gpu_temp_warn_c;
    }
}

void gpu_ecc_rule(const RuleInput& in, Findings& out) {
    for (std::size_t i = 0; i < in.cur.gpus.size(); ++i) {
        const Gpu& g = in.cur.gpus[i];
        if (in.rates) {
            if (auto d = delta_of(gpu_row(in, i), "ecc_uncorrected"); d && d->delta > 0) {
                Finding& f = out.add(rule::kGpuEccUncorrected, Severity::kCritical, SubjectKind::kGpu,
                                     2 + static_cast<double>(d->delta));
                gpu_key_into(g, f.reason.subject);
                append_parts(f.reason.message, gpu_name(g), ": ", std::to_string(d->delta),
                             " uncorrected ECC error(s) during the step — data corrupted, the process will "
                             "likely be killed");
                add_gpu_evidence(g, f.reason.evidence);
                f.reason.evidence["ecc_uncorrected_delta"] = static_cast<double>(d->delta);
            }
        }
        // Both stay until the GPU is reset: every sample of the job, written into a kept slot.
        const bool failed = g.remapped_rows_failure.value_or(0) > 0;
        if (!failed && g.remapped_rows_pending.value_or(0) == 0) continue;
        Finding& f = failed ? out.add(rule::kGpuRowRemapFailure, Severity::kCritical, SubjectKind::kGpu, 3)
                            : out.add(rule::kGpuRowRemapPending, Severity::kWarning, SubjectKind::kGpu, 2);
        gpu_key_into(g, f.reason.subject);
        if (!out.details_wanted(f)) continue;
        if (failed)
            append_parts(f.reason.message, gpu_name(g),
                         ": row remapping failed — no spare rows left, drain the node (RMA)");
        else
            append_parts(f.reason.message, gpu_name(g),
                         ": row remap pending — a memory row failed and the GPU needs a reset before the "
                         "remap takes effect");
        add_gpu_evidence(g, f.reason.evidence);
    }
}

XidClass xid_class(int code, const std::string& source_severity) {
    XidClass c = XidClass::kWarning;
    if (in_list(code, {9,  12, 16, 18, 19,  26,  27,  28,  29,  30,  32,  33,  34, 35, 36,
                       38, 42, 44, 46, 47,  48,  59,  60,  61,  62,  64,  65,  68, 69, 74,
                       78, 79, 81, 95, 109, 110, 119, 120, 121, 123, 136, 140, 143}))
        c = XidClass::kCritical;
    else if (in_list(code, {13, 31, 43, 45, 94}))
        c = XidClass::kApp;
    else if (in_list(code, {63, 152, 153, 157, 161, 162, 164, 165}))
        c = XidClass::kInfo;
    if (source_severity == "critical") c = XidClass::kCritical;
    return c;
}

const char* xid_class_name(XidClass c) {
    switch (c) {
        case XidClass::kCritical:
            return "critical";
        case XidClass::kApp:
            return "app";
        case XidClass::kWarning:
            return "warning";
        case XidClass::kInfo:
            return "info";
    }
    return "warning";
}

std::string normalize_bus_id(const std::string& bus_id) {
    std::string s;
    for (char c : bus_id) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.rfind("pci:", 0) == 0) s = s.substr(4);
    if (auto dot = s.find('.'); dot != std::string::npos) s = s.substr(0, dot);
    // keep the last two ':' components (bus:device)
    const auto last = s.rfind(':');
    if (last == std::string::npos || last == 0) return s;
    const auto before = s.rfind(':', last - 1);
    return before == std::string::npos ? s : s.substr(before + 1);
}

void xid_rule(const RuleInput& in, Findings& out) {
    struct Seen {
        int code;
        const Gpu* gpu;
        std::string bus_id, severity, message;
    };
    std::vector<Seen> events;
    std::set<std::pair<int, std::string>> dedup;
    auto add = [&](int code, const Gpu* gpu, const std::string& bus, const std::string& sev,
                   const std::string& msg) {
        const std::string who = gpu ? gpu_key(*gpu) : normalize_bus_id(bus);
        if (dedup.insert({code, who}).second) events.push_back({code, gpu, bus, sev, msg});
    };
    for (const auto& e : in.cur.xid_events) {
        const Gpu* match = nullptr;
        for (const auto& g : in.cur.gpus) {
            if ((e.gpu_index >= 0 && g.index == e.gpu_index) ||
                (!e.pci_bus_id.empty() && !g.pci_bus_id.empty() &&
                 normalize_bus_id(e.pci_bus_id) == normalize_bus_id(g.pci_bus_id)))
                match = &g;
        }
        add(e.code, match, e.pci_bus_id, e.severity, e.message);
    }
    for (const auto& g : in.cur.gpus)
        for (int code : g.xid) add(code, &g, g.pci_bus_id, "", "");

    for (const auto& e : events) {
        XidClass c = xid_class(e.code, e.severity);
        // Xid 94 carries NVIDIA's own verdict in the line ("RST: No, D-RST: No"): a contained ECC error
        // needs an application restart, not a drained node, whatever the code's class says (95,
        // uncontained, always needs a reset).
        if (e.code == 94 && e.message.find("RST: No") != std::string::npos &&
            e.message.find("RST: Yes") == std::string::npos)  // also catches "D-RST: Yes"
            c = XidClass::kApp;
        Evidence ev = e.gpu ? gpu_evidence(*e.gpu) : Evidence{};
        ev["xid"] = static_cast<double>(e.code);
        ev["class"] = std::string(xid_class_name(c));
        if (!e.bus_id.empty()) ev["pci_bus_id"] = e.bus_id;
        if (!e.message.empty()) ev["kernel_message"] = e.message.substr(0, 200);
        const std::string who = e.gpu ? gpu_name(*e.gpu) : (e.bus_id.empty() ? "unknown GPU" : e.bus_id);
        const std::string subject = e.gpu ? gpu_key(*e.gpu) : (e.bus_id.empty() ? "xid" : e.bus_id);
        const std::string head = who + ": Xid " + std::to_string(e.code);
        if (!e.gpu && !in.cur.gpus.empty()) {
            out.push_back(make_finding(rule::kGpuXidOtherGpu, Severity::kInfo, subject, SubjectKind::kOther,
                                       head + " on a GPU that is not one of this step's", std::move(ev), 1));
            continue;
        }
        switch (c) {
            case XidClass::kCritical:
                out.push_back(
                    make_finding(rule::kGpuXidCritical, Severity::kCritical, subject, SubjectKind::kGpu,
                                 head + (e.code == 79 ? " (GPU has fallen off the bus)" : "") +
                                     " — critical GPU error, the GPU needs a reset/reboot; drain the node",
                                 std::move(ev), 4));
                break;
            case XidClass::kApp:
                out.push_back(
                    make_finding(rule::kGpuXidAppError, Severity::kWarning, subject, SubjectKind::kGpu,
                                 head +
                                     (e.code == 13 ? " (graphics engine exception)"
                                      : c == XidClass::kApp && e.code == 94
                                          ? " (contained ECC error, RST: No: no GPU reset needed)"
                                          : "") +
                                     " — the application faulted on the GPU; the job is likely to die "
                                     "(restart the app, node is reusable)",
                                 std::move(ev), 3));
                break;
            case XidClass::kWarning:
                out.push_back(make_finding(rule::kGpuXidWarning, Severity::kWarning, subject,
                                           SubjectKind::kGpu, head + " — GPU warning event", std::move(ev),
                                           1.5, Hint::kCompute));
                break;
            case XidClass::kInfo:
                out.push_back(make_finding(rule::kGpuXidInfo, Severity::kInfo, subject, SubjectKind::kGpu,
                                           head + " — informational GPU event", std::move(ev), 1));
                break;
        }
    }
}

}  // namespace stallscope
