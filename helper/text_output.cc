#include "helper/text_output.h"

#include <cmath>
#include <cstdio>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::cli {

std::string evidence_text(const Evidence& evidence) {
    std::string out;
    for (const auto& [key, value] : evidence) {
        if (!out.empty()) out += ", ";
        out += key + "=";
        if (const double* d = std::get_if<double>(&value)) {
            char buf[32];
            // Counts stay exact ("4000000", not "4e+06"); fractions keep 4 significant digits.
            if (std::floor(*d) == *d && std::fabs(*d) < 1e15)
                std::snprintf(buf, sizeof buf, "%.0f", *d);
            else
                std::snprintf(buf, sizeof buf, "%.4g", *d);
            out += buf;
        } else {
            out += std::get<std::string>(value);
        }
    }
    return out;
}

// `--nccl-test` was asked for: its outcome is shown whatever it was (a missing all_reduce_perf too).
std::string nccl_test_text(const NcclTestResult& t) {
    char buf[256];
    if (t.outcome == "ok") {
        std::snprintf(buf, sizeof buf, "  nccl-test: all_reduce_perf ok, %d rows", t.rows);
        std::string out = buf;
        if (t.avg_busbw_gbs)
            std::snprintf(buf, sizeof buf, ", avg bus bandwidth %.2f GB/s", *t.avg_busbw_gbs), out += buf;
        if (t.peak_busbw_gbs)
            std::snprintf(buf, sizeof buf, ", peak %.2f GB/s", *t.peak_busbw_gbs), out += buf;
        return out + "\n";
    }
    if (t.outcome == "not_found")
        return "  nccl-test: not run: all_reduce_perf is not on PATH (install nccl-tests, or add its build/ "
               "directory to PATH)\n";
    std::snprintf(buf, sizeof buf, "  nccl-test: all_reduce_perf failed (%s, exit code %d)",
                  t.outcome.c_str(), t.exit_code);
    std::string out = buf;
    if (!t.errors.empty()) out += ": " + t.errors.front();
    return out + "\n";
}

namespace {

// A value that was not measured prints as '-', never 0 (as in the report).
std::string or_dash(const Gauge& v, const char* format) {
    if (!v) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, format, *v);
    return buf;
}

// What nvidia-smi's table would make a user look twice at: clock-event reasons other than idle, Xids of
// the last interval, uncorrected ECC errors, row remapping pending or failed.
std::vector<std::string> gpu_flags(const Gpu& g) {
    std::vector<std::string> out;
    const auto add = [&out](const std::string& flag) { out.push_back(flag); };
    for (const auto& r : g.throttle_reasons)
        if (r != "gpu_idle") add(r);
    for (int x : g.xid) add("xid" + std::to_string(x));
    if (g.ecc_uncorrected.value_or(0) > 0) add("ecc_uncorrected=" + std::to_string(*g.ecc_uncorrected));
    if (g.remapped_rows_pending.value_or(0) > 0) add("remap_pending");
    if (g.remapped_rows_failure.value_or(0) > 0) add("remap_failed");
    if (out.empty()) out.push_back("-");
    return out;
}

}  // namespace

// One line per GPU, like nvidia-smi's table, each within 80 columns.
std::string gpu_table_text(const std::vector<Gpu>& gpus) {
    if (gpus.empty()) return "";
    constexpr std::size_t kColumns = 80;
    std::string out = "  GPU  UTIL   MEMORY GiB     POWER W   TEMP  SM MHz  FLAGS\n";
    for (const auto& g : gpus) {
        const auto gib = [](const Counter& bytes) {
            return bytes ? Gauge(static_cast<double>(*bytes) / (1024.0 * 1024 * 1024)) : Gauge{};
        };
        const std::string memory =
            or_dash(gib(g.memory_used_bytes), "%.1f") + "/" + or_dash(gib(g.memory_total_bytes), "%.1f");
        const std::string power = or_dash(g.power_w, "%.0f") + "/" + or_dash(g.power_limit_w, "%.0f");
        const Gauge sm = g.sm_clock_mhz ? Gauge(static_cast<double>(*g.sm_clock_mhz)) : Gauge{};
        char line[160];
        std::snprintf(line, sizeof line, "  %3d  %4s  %11s  %10s  %5s  %6s  ", g.index,
                      (or_dash(g.utilization_pct, "%.0f") + (g.utilization_pct ? "%" : "")).c_str(),
                      memory.c_str(), power.c_str(),
                      (or_dash(g.temperature_c, "%.0f") + (g.temperature_c ? "C" : "")).c_str(),
                      or_dash(sm, "%.0f").c_str());
        // Flags past 80 columns continue on the next line, under the FLAGS column.
        const std::string indent(std::string(line).size(), ' ');
        std::string row = line;
        bool first_flag = true;
        for (const auto& flag : gpu_flags(g)) {
            if (!first_flag && row.size() + 1 + flag.size() > kColumns) {
                out += row + ",\n";
                row = indent;
            } else if (!first_flag) {
                row += ",";
            }
            row += flag;
            first_flag = false;
        }
        out += row + "\n";
    }
    return out;
}

std::string profile_text(const Snapshot& s, const Profile& p, const ProfileTextOptions& options) {
    // One sample cannot give a verdict (loss, PFC, ECC, OOM kills are deltas): the headline says that
    // and how to get one, instead of an UNKNOWN that reads as a verdict about the node.
    const bool first_only = p.label == "UNKNOWN" && p.unknown_reason.rfind("first_sample", 0) == 0;
    char head[320];
    if (first_only && options.timestamp)
        std::snprintf(head, sizeof head, "%s  %s  first sample: a verdict needs the next one\n",
                      format_rfc3339(s.time).c_str(), s.host.c_str());
    else if (first_only)
        std::snprintf(head, sizeof head,
                      "%s  no verdict from one sample: a verdict compares two samples (rates, errors).\n"
                      "  For one: stallscope --interval-seconds 5 --count 2, or `stallscope record`.\n",
                      s.host.c_str());
    else
        std::snprintf(head, sizeof head, "%s%s%s  %s  (confidence %.2f, bottleneck: %s)\n",
                      options.timestamp ? format_rfc3339(s.time).c_str() : "", options.timestamp ? "  " : "",
                      s.host.c_str(), p.label.c_str(), p.confidence, p.bottleneck_hint.c_str());
    std::string out = head;
    if (s.context.scheduler != "none") {
        out += "  job " + s.context.job_id + " step " + s.context.step_id + " (" + s.context.scheduler;
        if (options.detected_from_pid > 0)
            out += ", detected from pid " + std::to_string(options.detected_from_pid) +
                   ": this shell is not part of the job";
        else if (options.detected_from_pid == 0)
            out += ", detected from another process's environment: this shell is not part of the job";
        out += ")\n";
    }
    // The GPUs' model once when they share it (nvidia-smi's Name column, without repeating it 8 times).
    std::string model = s.gpus.empty() ? "" : s.gpus.front().name;
    for (const auto& g : s.gpus)
        if (g.name != model) model.clear();
    out += "  " + std::to_string(s.gpus.size()) + " GPUs" + (model.empty() ? "" : " (" + model + ")") + ", " +
           std::to_string(s.rdma.size()) + " RDMA ports, " + std::to_string(s.interfaces.size()) +
           " interfaces\n";
    if (!options.timestamp) out += gpu_table_text(s.gpus);
    if (!p.unknown_reason.empty() && !first_only) out += "  unknown: " + p.unknown_reason + "\n";
    if (s.nccl.nccl_test) out += nccl_test_text(*s.nccl.nccl_test);
    for (const auto& r : p.reasons) {
        if (first_only && r.code == "delta_rules_pending") continue;  // the headline says it
        out += "  - [" + r.severity + "] " + r.code + ": " + r.message + "\n";
        if (!r.evidence.empty()) out += "      evidence: " + evidence_text(r.evidence) + "\n";
    }
    const std::vector<std::string>& warnings = options.warnings ? *options.warnings : s.warnings;
    if (!warnings.empty()) {
        out += "  warnings (" + std::to_string(warnings.size()) + (options.timestamp ? " new" : "") + "):\n";
        for (const auto& w : warnings) out += "    " + w + "\n";
    }
    for (const auto& [name, why] : s.collector_failures)
        out += "  collector " + name + " failed: " + why + "\n";
    return out;
}

std::string verdict_text(const StepVerdict& v) {
    char head[256];
    std::snprintf(head, sizeof head, "%s  (confidence %.2f, bottleneck: %s, %d samples over %.0f s)\n",
                  v.label.c_str(), v.confidence, v.bottleneck_hint.c_str(), v.samples, v.duration_seconds());
    std::string out = head;
    for (const auto& u : v.unknown_reasons) out += "  unknown: " + u + "\n";
    int n = 0;
    for (const auto& s : v.reasons) {
        char line[384];
        std::snprintf(line, sizeof line, "  %d. [%s] %s%s%s (%.0f%% of the step, first at %s)\n", ++n,
                      s.reason.severity.c_str(), s.reason.code.c_str(), s.reason.subject.empty() ? "" : " @ ",
                      s.reason.subject.c_str(), s.share * 100.0, format_rfc3339(s.reason.first_seen).c_str());
        out += line;
        out += "     " + s.reason.message + "\n";
        if (!s.reason.evidence.empty()) out += "     evidence: " + evidence_text(s.reason.evidence) + "\n";
    }
    if (!v.worst_gpu.empty()) out += "  worst GPU: " + v.worst_gpu + "\n";
    if (!v.worst_port.empty()) out += "  worst port: " + v.worst_port + "\n";
    if (!v.worst_interface.empty()) out += "  worst interface: " + v.worst_interface + "\n";
    return out;
}

}  // namespace stallscope::cli
