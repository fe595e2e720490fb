// stallscope: the per-step helper (`record`, started by the SPANK plugin) and the user/admin CLI.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "helper/cli_args.h"
#include "helper/subcommands.h"
#include "stallscope_config.h"

namespace {

constexpr const char* kHelp =
    R"(stallscope - why is this GPU job slow? Per-job GPU, host and fabric profiling.

Usage:
  stallscope [--json]                         sample this node once and print a profile
  stallscope --interval-seconds N [--count K] [--json]
                                              sample every N seconds (fractions allowed); with --json
                                              one single-line JSON object per sample on stdout
      [--prometheus-textfile PATH]            also write Prometheus metrics atomically to PATH
      [--alert-webhook-url URL]               also POST Alertmanager v2 alerts (base URL or .../api/v2/alerts)
      [--rules FILE]                          thresholds file (see contrib/stallscope-rules.conf)
      [--driver-timeout SECONDS]              deadline for one NVML call (default 5); a hung driver
                                              becomes a telemetry reason instead of a stuck sampler
      [--nccl-test [--nccl-test-args "ARGS"]]  first run all_reduce_perf from PATH (default args
                                              -b 32M -e 256M -f 2 -g 1 -n 20 -w 5; killed after 5 min) and
                                              report its busbw, #wrong and exit reason with sample 1
  stallscope record --out-dir DIR [--interval-seconds N] [--lock-file F] [--liveness-fd FD]
                    [--driver-timeout S] [--prometheus-textfile PATH] [--alert-webhook-url URL] [--rules FILE]
                                              the per-step helper; the Slurm plugin starts it for
                                              `srun --stallscope=N`. Writes timeline.<step>.<host>.jsonl and,
                                              on SIGTERM, verdict.<step>.<host>.json into DIR
  stallscope replay TIMELINE... [--rules FILE] [--json]
                                              re-profile recorded timelines (same thresholds -> same verdict)
  stallscope report DIR|TIMELINE... [--json]  what an admin reads first: verdict, per-node/GPU/port tables
  stallscope summarize DIR                    merge every verdict/timeline in DIR into summary.json + .txt
  stallscope jobs [--since TIME] [--user U | --all-users] [--json]
                                              verdicts of past jobs from one `sacct` call (job comments)
  stallscope --version | --help

Labels: FAST (nothing wrong found), SLOW (something costs speed: congestion, throttling, idle GPUs),
FAIL_RISK (errors that precede crashes or hangs: Xid, ECC, RDMA timeouts, link down), UNKNOWN (not
enough data: first sample, no counters, a collector failed). reasons[0] is the root cause.

Environment (read by the CLI and the helper, never by root-run plugin code):
  STALLSCOPE_PROCFS_ROOT, STALLSCOPE_SYSFS_ROOT, STALLSCOPE_DEV_ROOT   read a fixture tree instead of
      /proc, /sys, /dev (MONITORING_PROCFS_ROOT / MONITORING_SYSFS_ROOT are accepted aliases)
  STALLSCOPE_ETHTOOL_ROOT     read `ethtool -S` text files <dir>/<iface> instead of the SIOCETHTOOL ioctl
  STALLSCOPE_NVML_LIBRARY     NVML shared object to dlopen (default libnvidia-ml.so.1)
  STALLSCOPE_NVIDIA_SMI       nvidia-smi used when NVML cannot load (default: nvidia-smi on PATH)
  NCCL_RAS_ADDR               NCCL RAS service to query from node 0 (default localhost:28028)
  STALLSCOPE_NCCL_RAS         auto (STATUS polls, version-gated, + MONITOR) | poll | monitor | off
  STALLSCOPE_NCCL_RAS_INTERVAL, STALLSCOPE_NCCL_RAS_DELAY   STATUS every N s (>= 30, default 60), first
                              poll after M s (default 60: not during communicator init)
  NCCL_INSPECTOR_DUMP_DIR     Inspector JSONL files <dir>/<host>-pid<pid>.log to tail
  STALLSCOPE_NCCL_LOGS        comma-separated NCCL/PyTorch log paths or globs to scan (plus
                              NCCL_DEBUG_FILE with %h/%p expanded)

Exit status: 0 success whatever the label, 2 usage error, 1 internal failure.
Bad or missing counters are warnings in the output, never an error.
)";

}  // namespace

int main(int argc, char** argv) {
    using namespace stallscope::cli;
    try {
        if (argc >= 2) {
            const std::string first = argv[1];
            if (first == "--help" || first == "-h" || first == "help") {
                std::fputs(kHelp, stdout);
                return 0;
            }
            if (first == "--version" || first == "-V") {
                std::printf("stallscope %s\n", STALLSCOPE_VERSION);
                return 0;
            }
            if (first == "record") return run_record(argc, argv, 2);
            if (first == "replay") return run_replay(argc, argv, 2);
            if (first == "report") return run_report(argc, argv, 2);
            if (first == "summarize") return run_summarize(argc, argv, 2);
            if (first == "jobs") return run_jobs(argc, argv, 2);
            if (first[0] != '-') throw UsageError("unknown command '" + first + "'");
        }
        return run_sample(argc, argv, 1);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "stallscope: %s (see 'stallscope --help')\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stallscope: internal error: %s\n", e.what());
        return 1;
    }
}
