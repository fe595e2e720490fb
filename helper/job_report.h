// A job seen through all its recordings (one timeline per step per node): per-node verdicts, per-GPU and
// per-port statistics, the merged job verdict, straggler and worst node/port, plain-language notes.
// Used by `report` (what an admin reads first) and `summarize` (the epilog's summary.json/.txt).
#pragma once

#include <string>
#include <vector>

#include "helper/replay_timeline.h"

namespace stallscope::cli {

struct GpuStats {
    std::string host, uuid, name;
    int index = -1;
    int samples = 0;
    double mean_util_pct = 0, mean_memory_pct = 0, mean_power_w = 0, max_temperature_c = 0;
    double throttle_share = 0;  // samples with a slowdown reason (power/thermal/HW), 0..1
    double idle_share = 0;      // samples at < 5 % utilization, 0..1
};

struct PortStats {
    std::string host, port, netdev;
    double rx_bytes = 0, tx_bytes = 0;                     // over the recording
    double cnp_per_second = 0, ecn_marked_per_second = 0;  // averages
    double pause_occupancy = 0;           // share of time paused (pause_duration), 0..1, when exposed
    double loss_per_million_packets = 0;  // out_of_sequence + packet_seq_err + ... per 1e6 received
};

struct NodeRecording {
    std::string host, step_id, timeline_path;
    ReplayResult replay;
    double mean_gpu_util_pct = -1;  // -1: no GPU data
};

struct JobReport {
    std::string job_id, user, job_name;
    std::vector<NodeRecording> nodes;
    std::vector<GpuStats> gpus;
    std::vector<PortStats> ports;
    StepVerdict verdict;  // merged: worst label, reasons of every node ordered earliest first
    std::string worst_node, straggler_node, straggler_gpu, worst_port;
    std::vector<std::string> notes;
    std::vector<std::string> warnings;
};

// Expands directories to their timeline.*.jsonl files. Unreadable inputs become warnings.
JobReport build_job_report(const std::vector<std::string>& inputs);

Json job_report_json(const JobReport& report);
std::string job_report_text(const JobReport& report);

}  // namespace stallscope::cli
