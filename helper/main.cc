// stallscope: the per-step helper (`record`, started by the SPANK plugin) and the user/admin CLI.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "helper/cli_args.h"
#include "helper/subcommands.h"
#include "libstallscope/util/printable.h"
#include "stallscope_config.h"

namespace {

constexpr const char* kHelp =
    R"(stallscope - why is this GPU job slow? Per-job GPU, host and fabric profiling.

Usage:
  stallscope [--json]                         sample this node once: one line per GPU (nvidia-smi-like);
                                              a verdict needs two samples (--interval-seconds, record)
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
                    [--timeline-format 1|2] [--job-writer [--merge-wait-seconds S]]
                                              the per-step helper; the Slurm plugin starts it for
                                              `srun --stallscope=N`. Writes timeline.<step>.<host>.jsonl.zst
                                              and, on SIGTERM, verdict.<step>.<host>.json into DIR
  stallscope replay TIMELINE|DIR|-... [--rules FILE] [--json] [--jobs N]
                                              re-profile recorded timelines (same thresholds -> same verdict)
  stallscope export TIMELINE|-                a timeline (v1 or v2) as v1 JSON lines, every sample whole
  stallscope report JOBID|DIR|TIMELINE... [--json] [--all] [--node HOST] [--top N] [--html FILE]
                                              what an admin reads first: verdict, grouped reasons,
                                              stragglers, per-node/GPU/port tables
  stallscope summarize DIR                    merge every verdict/timeline in DIR into summary.json + .txt
  stallscope jobs [JOBID...] [--since TIME] [--user U | --all-users] [--all] [--json]
                                              verdicts of past jobs from one `sacct` call (AdminComment)
  stallscope nodes [--since TIME] [--partition P] [--all-users] [--min-jobs N] [--top N] [--json]
                                              which nodes keep hurting their jobs (root cause, straggler,
                                              missing), with drain candidates and the command to run
  stallscope html JOBID|DIR|TIMELINE... -o FILE
                                              the report as one self-contained HTML page with charts
  stallscope compare A B [--json] [--html FILE]
                                              why is B slower than A? (timelines, job dirs or job ids)
  stallscope nvml-capture [--out FILE]        this node's NVML answers as a fake-NVML test fixture
  stallscope watch JOBID|DIR [--interval N] [--json] [--once]
                                              a running job across its nodes, redrawn every N s;
                                              names the rank a hang waits for when evidence exists
  stallscope COMMAND --help                   options and defaults of one command
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

Exit status: 0 success whatever the label, 2 usage error, 1 failure (an input that cannot be read, an
output that cannot be written, sacct failing). `stallscope COMMAND --help` lists a command's options.
Bad or missing counters are warnings in the output, never an error.
)";

struct SubcommandHelp {
    const char* name;
    const char* text;
};

// `stallscope X --help`: answered before X parses anything, so no subcommand can run by accident.
constexpr SubcommandHelp kSubcommandHelp[] = {
    {"record", R"(Usage: stallscope record --out-dir DIR [options]
The per-step helper; the Slurm plugin starts it for `srun --stallscope=N`. Writes
timeline.<step>.<host>.jsonl.zst and, on SIGTERM, verdict.<step>.<host>.json into DIR.

  --out-dir DIR                 output directory (required; falls back to a private directory when unwritable)
  --interval-seconds N          sampling interval (default 30, minimum 0.01)
  --count K                     stop after K samples (default: until SIGTERM)
  --lock-file F                 one helper per node per job, for manual runs (the plugin holds the lock)
  --liveness-fd FD              write the compact verdict segment to this descriptor (>= 3)
  --driver-timeout S            deadline for one NVML call (default 5)
  --prometheus-textfile PATH    also write Prometheus metrics to PATH (at most every 10 s)
  --alert-webhook-url URL       also POST Alertmanager v2 alerts (loads libcurl.so.4: Debian libcurl4)
  --rules FILE                  thresholds file (default: built-in thresholds)
  --timeline-format 1|2         2 (default): timeline.<step>.<host>.jsonl.zst, header once, then only
                                what changed, zstd with a flush per sample (read it with
                                `stallscope export FILE`: one JSON snapshot per line);
                                1: timeline.<step>.<host>.jsonl, every counter in every line
  --job-writer                  merge the job dir at stop (summary.json) and print the job's segment
  --merge-wait-seconds S        with --job-writer: wait up to S for the other nodes' verdicts (default 5)
)"},
    {"replay", R"(Usage: stallscope replay TIMELINE|DIR|-... [--rules FILE] [--json] [--jobs N]
Re-profile recorded timelines: the same thresholds give the same verdict as the live helper. A
timeline that ends with the helper's verdict is compared with it: "matches", or what differs (labels
and confidences, reasons only in one, other fields, the recording's version and thresholds).

  --rules FILE   thresholds to use instead of those recorded in the timeline header
  --json         one JSON object per timeline (verdict, matches_recorded, recorded_difference,
                 replay_warnings)
  --jobs N       timelines replayed in parallel (default: the number of cores); `-` reads stdin
Exit status: 0 when every timeline was read, 1 when one could not be, 2 usage error.
)"},
    {"report",
     R"(Usage: stallscope report JOBID|DIR|TIMELINE... [--json] [--all] [--node HOST] [--top N]
                         [--html FILE] [--rules FILE] [--jobs N] [--comment] [--ended] [--sacct PATH]
What an admin reads first: the job verdict, reasons grouped across nodes (root cause first), every
straggler node, the distribution of per-node GPU utilization and the worst nodes; fits a screen at any
job size. DIR is a stallscope-<jobid> output directory: its verdict.*.json files are merged (a timeline
is replayed only for a node whose verdict is missing, named recording_incomplete).
A JOBID (or job:JOBID) that names no file here is looked up: the directory its AdminComment's file=
names, else <WorkDir>/stallscope-JOBID (one sacct call), else ./stallscope-JOBID; the one read is said
on stderr.

  --json         the full report as JSON (schema stallscope.summary/1)
  --all          every node, GPU and port row
  --node HOST    full detail of one node
  --top N        worst nodes listed (default 10)
  --html FILE    also write the report as one self-contained HTML page (-o, --output FILE: the same)
  --rules FILE   re-profile every node's timeline with these thresholds instead of reading the
                 verdicts the helpers decided with theirs (a node without a timeline keeps its own)
  --jobs N       recordings read or replayed in parallel (default: the number of cores)
  --comment      only the job's one-line comment segment (stallscope/1 LABEL conf=... top=... nodes=...),
                 as the job's writer composes it; what contrib/slurm/slurmctld-epilog.sh writes into
                 AdminComment after a job that scancel or its time limit ended
  --ended        the job is over (the epilog passes it): a timeline without a verdict is a helper
                 that died (recording_incomplete, missing=), never a step still running
  --sacct PATH   the sacct binary used to look up a JOBID (default sacct on PATH)
Values that were not measured print as '-', never 0.
See also `stallscope html` for the same report as one self-contained HTML page with charts.

examples:
  stallscope report 4242
  stallscope report /shared/stallscope-4242
  stallscope report /shared/stallscope-4242 --node gpu-node-0007
  stallscope report /shared/stallscope-4242 --json | jq '.straggler_nodes'
  stallscope report /shared/stallscope-4242 --rules strict.conf   # what other thresholds would say
Exit status: 0 report written, 1 no readable timeline or JOBID not found, 2 usage error.
)"},
    {"export", R"(Usage: stallscope export TIMELINE|-
A timeline of either format (v1 .jsonl or v2 .jsonl.zst) as v1 JSON lines on stdout, every sample whole;
replaying the output gives the same verdict. (`zstdcat FILE | jq` shows v2's change records as they are.)
Exit status: 0 written, 1 not a stallscope timeline or unreadable, 2 usage error.
)"},
    {"summarize", R"(Usage: stallscope summarize DIR
Run by the epilog as the job user: merges every timeline in DIR into DIR/summary.json and
DIR/summary.txt. A directory without timelines (step too short) is a note, not an error.
Exit status: 0 written or nothing to summarize, 1 DIR missing or not writable, 2 usage error.
)"},
    {"jobs", R"(Usage: stallscope jobs [JOBID...] [--since TIME] [--user U | --all-users] [--all] [--json]
                       [--sacct PATH]
Verdicts of past jobs from one `sacct` call: the stallscope segment of each job's AdminComment
(written by the plugin as root; the user-writable Comment is never trusted). With JOBIDs, those jobs
however old (no start time unless --since is given); `stallscope report JOBID` shows one in full.
A job that hung shows who it waited for after its top reason: hang=culprit:rank2@node17/gpu3 (two
sources agree), hang=suspect:..., or hang=all_waiting (every rank inside the collective: the fabric).

  --since TIME   sacct start time (default now-1days): YYYY-MM-DD[THH:MM[:SS]], now[-N{minutes,hours,days,weeks}],
                 today, midnight, ...
  --user U       jobs of user U (default: your own)
  --all-users    jobs of every user (needs operator rights in slurmdbd)
  --all          also list jobs without a stallscope segment (VERDICT shows "-")
  --json         a JSON array instead of the table
  --sacct PATH   the sacct binary (default sacct on PATH)
Exit status: 0 listed, 1 sacct failed (its own message is shown), 2 usage error.
)"},
    {"nodes", R"(Usage: stallscope nodes [--since TIME] [--partition P] [--all-users] [--min-jobs N]
                        [--drain-share R] [--top N] [--json] [--sacct PATH]
Which nodes keep hurting the jobs they run, from one `sacct` call over a period. Each job's stallscope
segment in AdminComment (written as root by the plugin) names its root-cause node (node= of a SLOW or
FAIL_RISK job), its stragglers (stragglers=) and the nodes whose helper left no verdict (missing=). Per
node: jobs it ran (with a verdict), jobs that named it, the share, by role and reason. A node is only
credited with what a job says about the nodes sacct's NodeList has it run on.

  --since TIME       sacct start time (default now-7days): YYYY-MM-DD[THH:MM[:SS]], now-N{hours,days,weeks}, ...
  --partition P      only jobs of partition P (or P1,P2)
  --all-users        jobs of every user (needs operator rights in slurmdbd; otherwise your own jobs)
  --min-jobs N       rank a node only after it ran N jobs (default 3): one bad job proves little
  --drain-share R    drain candidate when named in >= R of its jobs (default 0.5) and in >= 2 jobs
  --top N            ranked nodes shown (default 20; the rest are counted); --json lists all
  --json             the ranking as JSON (schema stallscope.nodes/1)
  --sacct PATH       the sacct binary (default sacct on PATH)
Reading it: the baseline line says how often any node is named; a node far above it while its
job-mates were fine is the one to look at. The printed `scontrol update ... State=DRAIN` is the next
step, never run by stallscope; check `stallscope report` on one of the listed jobs first.

examples:
  stallscope nodes --all-users --since now-14days --partition gpu
  stallscope nodes --all-users --json | jq '.drain_candidates[].node'
Exit status: 0 listed, 1 sacct failed (its own message is shown), 2 usage error.
)"},
    {"html", R"(Usage: stallscope html JOBID|DIR|TIMELINE... -o FILE [--sacct PATH]
The job report as one self-contained HTML page (no network needed to view it): verdict, reasons on a
time axis, per-GPU utilization and power over time, per-port fabric rates, node x time heatmap for
multi-node jobs with the straggler/worst node marked, sortable tables.
A JOBID (or job:JOBID) that names no file here is looked up: the directory its AdminComment's file=
names, else <WorkDir>/stallscope-JOBID (one sacct call), else ./stallscope-JOBID; the one read is said
on stderr.

  -o, --output FILE   where to write the page (required; written atomically; --html FILE: the same)
  --sacct PATH        the sacct binary used to look up a JOBID (default sacct on PATH)

examples:
  stallscope html 4242 -o job-4242.html
Exit status: 0 written, 1 no readable timeline, JOBID not found or FILE not writable, 2 usage error.
)"},
    {"compare", R"(Usage: stallscope compare A|JOBID B|JOBID [--json] [--html FILE] [--sacct PATH]
Compare two jobs (yesterday's fast run A with today's slow run B). A and B are each a timeline, a
stallscope-<jobid> directory, or a job id (job:<id>, or a bare id when no file of that name exists
here): the directory its AdminComment's file= names, else <WorkDir>/stallscope-<id> (one sacct call),
else ./stallscope-<id>; the one read is said on stderr.
First whether B is slower, from what was measured: NCCL's own bus bandwidth where both jobs have
Inspector records of the same collectives, else the durations of the steps both ran (same work
assumed); "cannot tell" when neither compares. Then why: a reason that fired only in B, or the metric
that moved most against B (a gap in the data is never a cause). Also per-metric deltas (GPU
util/SM/power, fabric rates, host pressure) aligned by start, and the reasons in one and not the other.

  --json        the comparison as JSON (schema stallscope.compare/1; "speed" holds the measure)
  --html FILE   also write the comparison as a self-contained HTML page (-o, --output FILE: the same)
  --sacct PATH  the sacct binary used to resolve job ids (default sacct on PATH)
Exit status: 0 compared, 1 an input has no readable timeline or a job id was not found, 2 usage error.
)"},
    {"nvml-capture", R"(Usage: stallscope nvml-capture [--out FILE] [--gpm-seconds S]
What this node's NVML answers to every query stallscope makes (identity, gauges, clocks, throttle
reasons, ECC, NVLink/PCIe field values, processes, MIG instances, GPM over S seconds), written as a
fixture of the fake libnvidia-ml (tests/fake_nvml): a capture from any GPU becomes a test fixture.
contrib/validate-gpu-node.sh writes one per run.

  --out FILE        where to write the JSON (default: standard output)
  --gpm-seconds S   interval between the two GPM samples (default 1, at least 0.1)
Exit status: 0 written, 1 NVML cannot be loaded or FILE cannot be written, 2 usage error.
)"},
    {"watch", R"(Usage: stallscope watch JOBID|DIR [--interval N] [--json] [--once] [--top N] [--jobs N]
A running job's state across its nodes, from the timelines its helpers flushed so far, redrawn every N
seconds to fit the terminal at any job size: node counts per label, the reasons as they appeared
(* firing now, + new since the last frame), the worst nodes, and a hang banner naming the rank, node
and GPU the job waits for as soon as evidence.*.json files exist (written by the helpers when a hang is
confirmed). JOBID is found as the directory its AdminComment's file= names (after the job), else
<WorkDir>/stallscope-JOBID (one sacct call), else ./stallscope-JOBID.

  --interval N   seconds between frames (default 5, minimum 0.5)
  --json         one JSON object per frame (schema stallscope.watch/1) instead of the screen
  --once         one frame, then exit (scripts, tests)
  --top N        worst nodes in a JSON frame (default 20)
  --jobs N       recordings read in parallel (default: the number of cores)
  --sacct PATH   the sacct binary used for a JOBID (default sacct on PATH)
Exit status: 0 (with --once: 1 when DIR holds no recording yet), 1 DIR or job not found, 2 usage error.
)"},
};

const char* subcommand_help(const std::string& name) {
    for (const auto& h : kSubcommandHelp)
        if (name == h.name) return h.text;
    return nullptr;
}

// `X --help` / `X -h` anywhere before a `--`.
bool asks_for_help(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") return false;
        if (arg == "--help" || arg == "-h") return true;
    }
    return false;
}

// summarize is run by the epilog; a missing DIR must be an error there, not a silent "nothing recorded".
void check_summarize_dir(int argc, char** argv) {
    if (argc != 3 || argv[2][0] == '-') return;  // the subcommand reports usage errors itself
    struct stat st {};
    if (::stat(argv[2], &st) != 0)
        throw std::runtime_error(std::string("summarize: ") + argv[2] + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode))
        throw std::runtime_error(std::string("summarize: ") + argv[2] + ": not a directory");
}

// A standard descriptor the caller closed (`stallscope --json >&-`) would go to the first file this
// process opens: JSON lines written into a timeline or a socket. /dev/null takes its place instead.
void keep_standard_descriptors_open() {
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            const int null_fd = ::open("/dev/null", O_RDWR);  // the lowest free number: fd itself
            if (null_fd >= 0 && null_fd != fd) ::close(null_fd);
        }
}

// The subcommand's exit status; usage errors, failures and exceptions reported on stderr.
int run_command(int argc, char** argv) {
    using namespace stallscope::cli;
    try {
        if (argc >= 2) {
            const std::string first = argv[1];
            // `stallscope --json --help` too: the sampling options are the main help.
            if (first == "help" || (first[0] == '-' && asks_for_help(argc, argv, 1))) {
                std::fputs(kHelp, stdout);
                return 0;
            }
            if (first == "--version" || first == "-V") {
                std::printf("stallscope %s\n", STALLSCOPE_VERSION);
                return 0;
            }
            if (const char* help = subcommand_help(first); help && asks_for_help(argc, argv, 2)) {
                std::fputs(help, stdout);
                return 0;
            }
            if (first == "record") return run_record(argc, argv, 2);
            if (first == "replay") return run_replay(argc, argv, 2);
            if (first == "export") return run_export(argc, argv, 2);
            if (first == "report") return run_report(argc, argv, 2);
            if (first == "summarize") {
                check_summarize_dir(argc, argv);
                return run_summarize(argc, argv, 2);
            }
            if (first == "html") return run_html(argc, argv, 2);
            if (first == "compare") return run_compare(argc, argv, 2);
            if (first == "jobs") return run_jobs(argc, argv, 2);
            if (first == "nodes") return run_nodes(argc, argv, 2);
            if (first == "nvml-capture") return run_nvml_capture(argc, argv, 2);
            if (first == "watch") return run_watch(argc, argv, 2);
            if (first[0] != '-') throw UsageError("unknown command '" + first + "'");
        }
        return run_sample(argc, argv, 1);
    } catch (const UsageError& e) {
        // The help that lists the options of what was typed: the subcommand's own, else the main one.
        const std::string help = argc >= 2 && subcommand_help(argv[1])
                                     ? std::string("stallscope ") + argv[1] + " --help"
                                     : std::string("stallscope --help");
        std::fprintf(stderr, "stallscope: %s (see '%s')\n", stallscope::printable(e.what()).c_str(),
                     stallscope::printable(help).c_str());
        return 2;
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "stallscope: %s\n", stallscope::printable(e.what()).c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stallscope: internal error: %s\n", stallscope::printable(e.what()).c_str());
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    keep_standard_descriptors_open();
    const int status = run_command(argc, argv);
    // What the command printed through stdio: a report to a full disk is a failure, not exit 0 (as
    // coreutils' close_stdout). A command that failed has said why already.
    const bool flush_failed = std::fflush(stdout) != 0;
    const int flush_errno = errno;
    if (!flush_failed && !std::ferror(stdout)) return status;
    if (status != 0) return status;
    std::fprintf(stderr, "stallscope: cannot write the output: %s\n",
                 flush_failed ? std::strerror(flush_errno) : "a write to standard output failed");
    return 1;
}
