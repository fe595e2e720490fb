#include "helper/job_report.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace stallscope::cli {
namespace {

int label_rank(const std::string& label) {
    if (label == kLabelFailRisk) return 3;
    if (label == kLabelSlow) return 2;
    if (label == kLabelFast) return 1;
    return 0;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs,
                                       std::vector<std::string>& warnings) {
    std::vector<std::string> files;
    for (const auto& in : inputs) {
        struct stat st {};
        if (::stat(in.c_str(), &st) != 0) {
            warnings.push_back(in + ": not found");
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            files.push_back(in);
            continue;
        }
        std::vector<std::string> found;
        if (DIR* d = ::opendir(in.c_str())) {
            while (dirent* e = ::readdir(d)) {
                const std::string name = e->d_name;
                if (name.rfind("timeline.", 0) == 0 && name.size() > 6 &&
                    name.substr(name.size() - 6) == ".jsonl")
                    found.push_back(in + "/" + name);
            }
            ::closedir(d);
        }
        if (found.empty()) warnings.push_back(in + ": no timeline.*.jsonl files");
        std::sort(found.begin(), found.end());
        files.insert(files.end(), found.begin(), found.end());
    }
    return files;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

bool slowdown_reason(const std::string& r) {
    return r.find("power") != std::string::npos || r.find("thermal") != std::string::npos ||
           r.find("hw_slowdown") != std::string::npos;
}

double sum_of(const std::map<std::string, CounterDelta>* row, std::initializer_list<const char*> names) {
    double total = 0;
    if (!row) return 0;
    for (const char* n : names)
        if (auto it = row->find(n); it != row->end()) total += static_cast<double>(it->second.delta);
    return total;
}

// Per-GPU and per-port statistics of one recording, fed one sample at a time during the replay pass
// (only the previous sample is kept, for the port deltas).
class NodeStatsAccumulator {
  public:
    void add(const Snapshot& s) {
        for (const auto& g : s.gpus) add_gpu(g);
        if (previous_) add_ports(compute_rates(*previous_, s), s);
        previous_ = s;
    }

    void finish(const std::string& host, std::vector<GpuStats>& gpus_out, std::vector<PortStats>& ports_out) {
        for (auto& [key, st] : gpus_) {
            const double n = st.samples;
            st.host = host;
            st.mean_util_pct /= n, st.mean_memory_pct /= n, st.mean_power_w /= n, st.throttle_share /= n,
                st.idle_share /= n;
            gpus_out.push_back(st);
        }
        for (auto& [key, acc] : ports_) {
            PortStats st = acc.stats;
            st.host = host;
            if (acc.seconds > 0) {
                st.cnp_per_second /= acc.seconds, st.ecn_marked_per_second /= acc.seconds;
                st.pause_occupancy = std::min(1.0, acc.paused_us / 1e6 / acc.seconds);
            }
            if (acc.rcv_packets > 0) st.loss_per_million_packets = acc.lost / acc.rcv_packets * 1e6;
            ports_out.push_back(st);
        }
    }

  private:
    struct PortAccumulator {
        PortStats stats;  // sums until finish()
        double seconds = 0, paused_us = 0, rcv_packets = 0, lost = 0;
    };

    void add_gpu(const Gpu& g) {
        auto& st = gpus_[gpu_key(g)];
        st.uuid = g.uuid, st.name = g.name, st.index = g.index;
        ++st.samples;
        st.mean_util_pct += g.utilization_pct.value_or(0);
        if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes)
            st.mean_memory_pct += 100.0 * static_cast<double>(*g.memory_used_bytes) /
                                  static_cast<double>(*g.memory_total_bytes);
        st.mean_power_w += g.power_w.value_or(0);
        st.max_temperature_c = std::max(st.max_temperature_c, g.temperature_c.value_or(0));
        if (std::any_of(g.throttle_reasons.begin(), g.throttle_reasons.end(), slowdown_reason))
            st.throttle_share += 1;
        if (g.utilization_pct && *g.utilization_pct < 5) st.idle_share += 1;
    }

    void add_ports(const Rates& r, const Snapshot& s) {
        for (const auto& p : s.rdma) {
            auto& acc = ports_[p.key()];
            acc.stats.port = p.key(), acc.stats.netdev = p.netdev;
            const auto* c = r.rdma_counters.count(p.key()) ? &r.rdma_counters.at(p.key()) : nullptr;
            const auto* hw = r.rdma_hw_counters.count(p.key()) ? &r.rdma_hw_counters.at(p.key()) : nullptr;
            acc.stats.rx_bytes += 4 * sum_of(c, {"port_rcv_data"});
            acc.stats.tx_bytes += 4 * sum_of(c, {"port_xmit_data"});
            acc.stats.cnp_per_second += sum_of(hw, {"np_cnp_sent", "rp_cnp_handled"});
            acc.stats.ecn_marked_per_second += sum_of(hw, {"np_ecn_marked_roce_packets"});
            acc.rcv_packets += sum_of(c, {"port_rcv_packets"});
            acc.lost +=
                sum_of(hw, {"out_of_sequence", "packet_seq_err", "duplicate_request", "implied_nak_seq_err"});
            acc.seconds += r.interval_seconds;
            if (!p.netdev.empty() && r.interfaces.count(p.netdev))
                acc.paused_us +=
                    sum_of(&r.interfaces.at(p.netdev), {"rx_pause_duration", "tx_pause_duration"});
        }
    }

    std::map<std::string, GpuStats> gpus_;
    std::map<std::string, PortAccumulator> ports_;
    std::optional<Snapshot> previous_;
};

// As in a node's verdict: reasons that set the label first, then other warnings, then info; earliest
// first inside each group (the root cause before its symptoms).
void order_reasons(StepVerdict& v) {
    auto group = [&](const ReasonSummary& r) {
        if (r.reason.label == v.label) return 0;
        return r.reason.severity == "info" ? 2 : 1;
    };
    std::stable_sort(v.reasons.begin(), v.reasons.end(), [&](const ReasonSummary& a, const ReasonSummary& b) {
        if (group(a) != group(b)) return group(a) < group(b);
        return a.reason.first_seen < b.reason.first_seen;
    });
}

void merge_verdicts(JobReport& job) {
    StepVerdict& v = job.verdict;
    int best_rank = -1;
    const NodeRecording* worst = nullptr;
    for (const auto& n : job.nodes) {
        const StepVerdict& nv = n.replay.verdict;
        const int rank = label_rank(nv.label);
        const bool earlier =
            worst && !nv.reasons.empty() && !worst->replay.verdict.reasons.empty() &&
            nv.reasons.front().reason.first_seen < worst->replay.verdict.reasons.front().reason.first_seen;
        if (rank > best_rank || (rank == best_rank && earlier)) best_rank = rank, worst = &n;
        for (auto r : nv.reasons) {
            if (job.nodes.size() > 1)
                r.reason.subject = n.host + (r.reason.subject.empty() ? "" : ":" + r.reason.subject);
            v.reasons.push_back(std::move(r));
        }
        for (const auto& u : nv.unknown_reasons)
            if (std::find(v.unknown_reasons.begin(), v.unknown_reasons.end(), u) == v.unknown_reasons.end())
                v.unknown_reasons.push_back(u);
        v.start_time = v.samples ? std::min(v.start_time, nv.start_time) : nv.start_time;
        v.end_time = std::max(v.end_time, nv.end_time);
        v.samples += nv.samples;
    }
    std::stable_sort(v.reasons.begin(), v.reasons.end(), [](const ReasonSummary& a, const ReasonSummary& b) {
        return a.reason.first_seen < b.reason.first_seen;
    });
    if (!worst) return;
    v.label = worst->replay.verdict.label;
    v.confidence = worst->replay.verdict.confidence;
    v.bottleneck_hint = worst->replay.verdict.bottleneck_hint;
    v.worst_gpu = worst->replay.verdict.worst_gpu;
    v.worst_port = worst->replay.verdict.worst_port;
    v.worst_interface = worst->replay.verdict.worst_interface;
    if (job.nodes.size() > 1 && best_rank >= 2) job.worst_node = worst->host;
    job.worst_port =
        v.worst_port.empty() ? "" : (job.nodes.size() > 1 ? worst->host + ":" : "") + v.worst_port;
}

// A node whose GPUs run well below its peers' (30 %) holds back every collective of the job; no single
// node's verdict can see that, so it becomes a job-level reason here.
void find_straggler_node(JobReport& job) {
    std::vector<double> node_utils;
    const NodeRecording* slowest = nullptr;
    for (const auto& n : job.nodes) {
        if (n.mean_gpu_util_pct < 0) continue;
        node_utils.push_back(n.mean_gpu_util_pct);
        if (!slowest || n.mean_gpu_util_pct < slowest->mean_gpu_util_pct) slowest = &n;
    }
    const double node_median = median(node_utils);
    if (!slowest || node_utils.size() < 2 || node_median <= 20 ||
        slowest->mean_gpu_util_pct >= 0.7 * node_median)
        return;
    job.straggler_node = slowest->host;
    ReasonSummary r;
    r.reason.code = "node_straggler";
    r.reason.category = "gpu";
    r.reason.severity = "warning";
    r.reason.label = kLabelSlow;
    r.reason.subject = slowest->host;
    char msg[256];
    std::snprintf(
        msg, sizeof msg,
        "%s: GPUs at %.0f %% mean utilization while the job's nodes run at %.0f %% (median) - this node "
        "holds back every collective",
        slowest->host.c_str(), slowest->mean_gpu_util_pct, node_median);
    r.reason.message = msg;
    r.reason.evidence = {{"node_util_pct", slowest->mean_gpu_util_pct},
                         {"median_node_util_pct", node_median},
                         {"threshold_frac_of_median", 0.7}};
    r.reason.first_seen = slowest->replay.verdict.start_time;
    r.last_seen = slowest->replay.verdict.end_time;
    r.samples = slowest->replay.verdict.samples;
    r.duration_seconds = slowest->replay.verdict.duration_seconds();
    r.share = job.verdict.duration_seconds() > 0 ? r.duration_seconds / job.verdict.duration_seconds() : 0;
    job.verdict.reasons.push_back(std::move(r));
    if (label_rank(job.verdict.label) < label_rank(kLabelSlow)) {
        job.verdict.label = kLabelSlow;
        job.verdict.bottleneck_hint = "compute";
        job.worst_node = slowest->host;
    }
}

// A GPU well below the other GPUs of its own node (a whole slow node is the straggler node instead).
void find_straggler_gpu(JobReport& job) {
    std::map<std::string, std::vector<const GpuStats*>> by_host;
    for (const auto& g : job.gpus) by_host[g.host].push_back(&g);
    double worst_gap = 0;
    for (const auto& [host, gpus] : by_host) {
        std::vector<double> utils;
        for (const auto* g : gpus) utils.push_back(g->mean_util_pct);
        const double m = median(utils);
        for (const auto* g : gpus)
            if (gpus.size() >= 2 && m > 20 && g->mean_util_pct < 0.7 * m &&
                m - g->mean_util_pct > worst_gap) {
                worst_gap = m - g->mean_util_pct;
                job.straggler_gpu = host + ":" + (g->uuid.empty() ? std::to_string(g->index) : g->uuid);
            }
    }
}

void find_worst_port(JobReport& job) {
    if (!job.worst_port.empty()) return;
    auto score = [](const PortStats& s) {
        return s.loss_per_million_packets + s.cnp_per_second + s.pause_occupancy * 1e4;
    };
    const PortStats* worst = nullptr;
    for (const auto& s : job.ports)
        if (score(s) > 0 && (!worst || score(s) > score(*worst))) worst = &s;
    if (worst) job.worst_port = (job.nodes.size() > 1 ? worst->host + ":" : "") + worst->port;
}

// A timeline without a verdict line: its helper stopped before the step ended (SIGKILL, OOM kill, crash)
// or is still running. What it flushed is replayed as usual; the job verdict says the recording is
// partial, and a FAST over partial data becomes UNKNOWN (silence must not read as FAST).
void note_incomplete_recordings(JobReport& job) {
    for (const auto& n : job.nodes) {
        if (n.replay.recorded_verdict.is_object() || !n.replay.header.is_object()) continue;
        ReasonSummary r;
        r.reason.code = "recording_incomplete";
        r.reason.category = "telemetry";
        r.reason.severity = "warning";
        r.reason.label = kLabelUnknown;
        r.reason.subject = n.host;
        r.reason.message = n.host + ": " + n.timeline_path +
                           " ends without a verdict line - the helper stopped before the step ended "
                           "(killed, crashed, or still running); the " +
                           std::to_string(n.replay.samples) + " samples it flushed" +
                           (n.replay.samples ? " (up to " + format_rfc3339(n.replay.verdict.end_time) + ")"
                                             : std::string()) +
                           " are replayed";
        r.reason.evidence = {{"samples_flushed", static_cast<double>(n.replay.samples)}};
        r.reason.first_seen = n.replay.verdict.end_time;
        r.last_seen = n.replay.verdict.end_time;
        job.verdict.reasons.push_back(std::move(r));
        if (job.verdict.label == kLabelFast || job.verdict.label == kLabelUnknown) {
            job.verdict.label = kLabelUnknown;
            if (std::find(job.verdict.unknown_reasons.begin(), job.verdict.unknown_reasons.end(),
                          "recording_incomplete") == job.verdict.unknown_reasons.end())
                job.verdict.unknown_reasons.push_back("recording_incomplete");
        }
    }
}

void write_notes(JobReport& job) {
    char buf[256];
    int idle = 0;
    double idle_share = 0;
    for (const auto& g : job.gpus)
        if (g.idle_share >= 0.3) ++idle, idle_share = std::max(idle_share, g.idle_share);
    if (idle) {
        std::snprintf(buf, sizeof buf, "%d of %zu GPUs idle for up to %.0f %% of the step", idle,
                      job.gpus.size(), idle_share * 100);
        job.notes.push_back(buf);
    }
    for (const auto& g : job.gpus)
        if (g.throttle_share >= 0.1) {
            std::snprintf(buf, sizeof buf,
                          "GPU %d on %s throttled (power/thermal/HW slowdown) in %.0f %% of samples", g.index,
                          g.host.c_str(), g.throttle_share * 100);
            job.notes.push_back(buf);
        }
    for (const auto& p : job.ports) {
        if (p.pause_occupancy >= 0.05) {
            std::snprintf(buf, sizeof buf,
                          "PFC pause occupancy %.0f %% on %s (%s) - fabric congestion upstream",
                          p.pause_occupancy * 100, p.port.c_str(), p.host.c_str());
            job.notes.push_back(buf);
        }
        if (p.loss_per_million_packets >= 1) {
            std::snprintf(buf, sizeof buf, "%.1f RDMA packets lost per million received on %s (%s)",
                          p.loss_per_million_packets, p.port.c_str(), p.host.c_str());
            job.notes.push_back(buf);
        }
    }
    if (!job.straggler_node.empty())
        job.notes.push_back("straggler node: " + job.straggler_node +
                            " (GPU utilization well below its peers)");
    if (!job.straggler_gpu.empty()) job.notes.push_back("straggler GPU: " + job.straggler_gpu);
}

}  // namespace

JobReport build_job_report(const std::vector<std::string>& inputs) {
    JobReport job;
    for (const auto& path : expand_inputs(inputs, job.warnings)) {
        NodeRecording node;
        node.timeline_path = path;
        NodeStatsAccumulator stats;
        std::string error;
        if (!replay_timeline(path, std::nullopt, false, node.replay, error,
                             [&](const Snapshot& s) { stats.add(s); })) {
            job.warnings.push_back(error);
            continue;
        }
        const ReplayResult& r = node.replay;
        for (const auto& w : r.warnings) job.warnings.push_back(w);
        auto header_string = [&](const char* key) {
            const auto it = r.header.is_object() ? r.header.find(key) : r.header.end();
            return r.header.is_object() && it != r.header.end() && it->is_string() ? it->get<std::string>()
                                                                                   : std::string();
        };
        node.host = header_string("host");
        node.step_id = header_string("step_id");
        if (r.first_sample) {
            if (node.host.empty()) node.host = r.first_sample->host;
            const auto& ctx = r.first_sample->context;
            if (job.job_id.empty()) job.job_id = ctx.job_id, job.user = ctx.user, job.job_name = ctx.job_name;
        }
        std::vector<GpuStats> gpus;
        stats.finish(node.host, gpus, job.ports);
        if (gpus.empty() && r.first_sample && !r.first_sample->context.gpus.empty()) {
            // Say why allocated GPUs show no numbers (no driver, NVML missing) instead of a silent "0 GPUs".
            std::string why = "no GPU telemetry";
            for (const auto& w : r.first_sample->warnings)
                if (w.find("GPU") != std::string::npos) why = w;
            job.notes.push_back(node.host + ": " + std::to_string(r.first_sample->context.gpus.size()) +
                                " GPU(s) allocated but none measured - " + why);
        }
        if (!gpus.empty()) {
            node.mean_gpu_util_pct = 0;
            for (const auto& g : gpus)
                node.mean_gpu_util_pct += g.mean_util_pct / static_cast<double>(gpus.size());
        }
        job.gpus.insert(job.gpus.end(), gpus.begin(), gpus.end());
        job.nodes.push_back(std::move(node));
    }
    merge_verdicts(job);
    find_straggler_node(job);
    find_straggler_gpu(job);
    find_worst_port(job);
    note_incomplete_recordings(job);
    order_reasons(job.verdict);
    if (job.nodes.size() > 1) job.verdict.worst_port = job.worst_port;
    write_notes(job);
    return job;
}

}  // namespace stallscope::cli
