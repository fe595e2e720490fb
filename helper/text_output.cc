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

std::string profile_text(const Snapshot& s, const Profile& p, const ProfileTextOptions& options) {
    char head[320];
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
    out += "  " + std::to_string(s.gpus.size()) + " GPUs, " + std::to_string(s.rdma.size()) +
           " RDMA ports, " + std::to_string(s.interfaces.size()) + " interfaces\n";
    if (!p.unknown_reason.empty()) out += "  unknown: " + p.unknown_reason + "\n";
    if (s.nccl.nccl_test) out += nccl_test_text(*s.nccl.nccl_test);
    for (const auto& r : p.reasons) {
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
