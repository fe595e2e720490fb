// Every number the profiler judges by, with its default and why. The same keys are read from the rules
// config file (contrib/stallscope-rules.conf documents each one) and written into the timeline header, so a
// replay with the same file reproduces the recorded verdict.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace stallscope {

struct Thresholds {
    // ---- step / verdict ----
    // Verdicts on steps shorter than this are UNKNOWN(step_too_short) unless a rule found real evidence.
    // per-job-anchors (c): "verdict after >= 30 s; below that UNKNOWN(short)".
    double min_step_seconds = 30;
    // A SLOW reason must cover this share of the step to make the step SLOW (a 10 s CNP burst in a one-hour
    // step is reported but the step stays FAST). FAIL_RISK reasons need only one sample.
    double verdict_slow_min_share = 0.05;
    // Time policy of SLOW reasons (rules/README.md): a condition counts when one episode of it lasted this
    // long (sustained) ... A checkpoint write or an evaluation pass dips the GPUs for 10-60 s.
    double verdict_sustained_seconds = 60;
    // ... or when its shorter episodes together cover this share of the step (pervasive). Below both it
    // is transient: listed as info with its episodes ("5 dips of ~15 s, every ~5 min").
    double verdict_transient_max_share = 0.25;
    // A GPU symptom (low utilization, idle, straggler) that begins with the step and clears within this
    // long is start-up (model load, NCCL init, data-loader warm-up) and never counts.
    double verdict_startup_max_seconds = 600;
    // Collectors failing in more than this share of samples -> UNKNOWN(collectors_failing).
    double collectors_failing_min_share = 0.2;

    // ---- fabric: congestion (RoCE ECN / DCQCN, node-health-anchors 7.4) ----
    // CNPs handled by this host as a sender (rp_cnp_handled), per second. DCQCN emits at most one CNP per
    // QP per ~50 us, so a few hundred per second means persistent, not incidental, rate cuts.
    double cnp_handled_per_s = 500;
    // ECN-marked RoCE packets received / CNPs sent (np_*), per second: the path into this host is congested.
    double ecn_marked_per_s = 500;

    // ---- fabric: PFC ----
    // Share of time a priority was paused by the peer (delta rx_prio<p>_pause_duration us / interval).
    // 5 % paused is >= 5 % lost bandwidth on the RoCE priority; a tuned ECN fabric shows ~0.
    double pfc_rx_pause_occupancy_pct = 5;
    // Same for pauses this host sent (tx_*): the adapter cannot absorb traffic (PCIe/host bottleneck).
    double pfc_tx_pause_occupancy_pct = 5;
    // Pause frames per second when the NIC exposes no duration: ~1000 max-quanta frames at 400 Gb/s is
    // ~8 % of the time paused.
    double pfc_pause_frames_per_s = 1000;
    // Frame-rate-only detection must hold this many consecutive intervals ("sustained").
    double pfc_sustained_intervals = 2;
    // rx_discards_phy / out_of_buffer drops per second: the host ran out of receive buffers.
    double host_rx_discards_per_s = 100;

    // ---- fabric: loss and errors ----
    // out_of_sequence + packet_seq_err + duplicate_request + implied_nak_seq_err per million received
    // packets. Go-back-N retransmits a whole window per loss, so even 1 ppm costs; 100 ppm is a broken path.
    double rdma_loss_slow_per_mpkt = 1;
    double rdma_loss_fail_per_mpkt = 100;
    // Ignore fewer loss events than this in one interval (one stray event on an idle port is not a ratio).
    double rdma_loss_min_events = 10;
    // Loss events per second when the port exposes no packet counter to normalise by.
    double rdma_loss_fail_per_s = 100;
    // RNR NAKs (receiver not ready) per interval that count as a fabric error (brief: any delta).
    double rnr_nak_min_events = 1;

    // ---- interfaces (/proc/net/dev) ----
    // errors + drops per million packets on the netdev behind an RDMA port (non-RDMA interfaces are only
    // reported: TCP retransmits / drops on eth0 are not the RDMA path).
    double iface_errors_per_mpkt = 100;
    double iface_min_events = 10;

    // ---- GPU ----
    // Mean utilization of the non-idle GPUs below this -> SLOW (jobstats GPU_UTIL_BLACK = 25).
    double gpu_util_low_pct = 25;
    // A GPU at or below this utilization is idle (jobstats "did not use N of M GPUs").
    double gpu_idle_util_pct = 1;
    // ... for this long (per-job-anchors (c): "flag any GPU at 0 % for >= 5 min").
    double gpu_idle_window_seconds = 300;
    // Memory used / total at or above this: one allocation away from CUDA OOM (caching allocators sit at
    // 85-95 %, so this is deliberately high). Reported as a warning, not a slowdown.
    double gpu_memory_high_pct = 98;
    // Temperature warning: H100/GB200 HW slowdown starts around 87-90 C (GPUd temperature/threshold.go).
    double gpu_temp_warn_c = 85;
    // Thermal throttle: SM clock at least this far below the step's busy peak ...
    double thermal_clock_drop_pct = 10;
    // ... while temperature rose at least this much since that peak.
    double thermal_temp_rise_c = 5;
    // GPUd: HW slowdown / HW thermal / power brake set in >= 6 of the last 10 minutes is unhealthy.
    double hw_slowdown_window_seconds = 600;
    double hw_slowdown_min_share = 0.6;
    // Busy-wait hang: utilization at least this high ...
    double hang_util_pct = 90;
    // ... while drawing at most this share of the power limit (idle H100 ~10 %, real compute >= 40 %) ...
    double hang_power_max_frac = 0.25;
    // ... for this many consecutive samples (a spinning NCCL kernel waiting on a dead peer).
    double hang_min_samples = 5;
    // Straggler: a busy GPU this many utilization points below the median of its peers ...
    double straggler_util_gap_pct = 30;
    // ... or drawing this share less power than the peer median ...
    double straggler_power_gap_frac = 0.4;
    // ... in this many consecutive samples.
    double straggler_min_samples = 3;

    // ---- host ----
    // PSI "full" avg10: share of time all non-idle tasks stalled on memory / IO (kernel psi.rst).
    double psi_memory_full_pct = 10;
    double psi_io_full_pct = 20;
    // PSI cpu "some" avg10: runnable tasks waiting for a CPU (data loaders starved).
    double psi_cpu_some_pct = 60;
    // MemAvailable / MemTotal below this: the page cache is gone, OOM kills are next.
    double mem_available_low_pct = 5;
    // Processes in D state, sustained (GPUd os component: 5 consecutive checks).
    double procs_blocked_max = 8;
    double procs_blocked_min_samples = 5;

    // ---- nccl (RAS / Inspector, research/nccl-rccl-observability.md 1.9, 2.8) ----
    // A collective-count mismatch with the same lagging ranks at the same counts, over >= 2 RAS polls,
    // held this long -> nccl_collective_hang. Transient mismatches clear within one poll (RAS docs);
    // Ray Train confirms after ~10 min before acting, we warn after two 60 s polls.
    double nccl_hang_min_seconds = 120;
    // Inspector straggler: joined collective instances with a significant arrival skew in the window ...
    double nccl_straggler_min_instances = 8;
    // ... of which the same rank arrived last in at least this share (random jitter spreads ~1/n).
    double nccl_straggler_min_share = 0.6;
    // Median bus bandwidth of a (comm, collective, size) this many % below the step's best -> SLOW
    // (research notes 2.8: < 0.7x baseline).
    double nccl_busbw_drop_pct = 30;
    // ... judged only on ranks with at least this many records in the sample (one op is noise).
    double nccl_busbw_min_records = 4;

    // ---- telemetry ----
    // A whole counter family (all RDMA counters, a GPU's energy) that moved earlier in the step and then
    // stayed frozen this long while samples kept coming is a stuck collector, not a quiet node.
    double stale_seconds = 120;
    double stale_min_samples = 3;
};

// One documented key of the config file.
struct ThresholdKey {
    const char* name;
    double Thresholds::*member;
    double min, max;  // accepted range, inclusive
};
std::span<const ThresholdKey> threshold_keys();

// Parses the config file format: `key = value` lines, `#` comments, unknown key or bad value -> error
// message naming file:line. Returns Thresholds with defaults for keys not given.
std::optional<Thresholds> load_thresholds(const std::string& path, std::string& error);
// Same, from text already in memory (`origin` names it in errors).
std::optional<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                           std::string& error);
// Every key with its value, in file order: for the timeline header and --help.
std::vector<std::pair<std::string, double>> thresholds_as_pairs(const Thresholds&);

}  // namespace stallscope
