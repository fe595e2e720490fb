// plugstack.conf arguments of the stallscope SPANK plugin: strict key=value parsing, no SPANK symbols
// (compiled into the plugin and into tests/spank).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace stallscope::spank {

// Where the job comment segment goes: AdminComment (read-modify-write, default), the user's Comment
// (overwritten: it replaces what --comment set), or nowhere.
enum class CommentTarget { admin, user, none };

// How the per-job output directory is chosen (see resolve_output_dir in helper_spec.h).
enum class OutputPolicy {
    submit,    // <SLURM_SUBMIT_DIR>/stallscope-<jobid>            (default)
    cwd,       // <job working directory>/stallscope-<jobid>
    template_  // an absolute path with %u %j %% placeholders; "/stallscope-%j" appended when it has no %j
};

struct PluginConfig {
    std::string helper;  // set from STALLSCOPE_SPANK_DEFAULT_HELPER by default_config()
    unsigned default_interval = 30;
    unsigned stop_timeout = 10;      // seconds the last task_exit waits for the helper after SIGTERM
    unsigned epilog_timeout = 30;    // seconds job_epilog lets `stallscope summarize` run
    unsigned scontrol_timeout = 10;  // seconds before an scontrol call is killed
    // Upper bound for the last task_exit (helper stop + the job comment's scontrol calls): it runs inside
    // slurmstepd's task wait loop, and beyond UnkillableStepTimeout (60 s by default) the node is
    // drained. Checked at load against task_exit_worst_case(); the defaults need 58 s.
    unsigned task_exit_budget = 58;
    OutputPolicy output_policy = OutputPolicy::submit;
    std::string output_template;  // for OutputPolicy::template_
    CommentTarget comment = CommentTarget::admin;
    bool always_on = false;
    unsigned min_interval = 1;
    unsigned max_interval = 3600;
    std::string run_dir = "/run/stallscope";
    // NCCL/PyTorch environment help (spank/nccl_env.h): off unless nccl_env=1 or the job sets
    // STALLSCOPE_NCCL_ENV=1. The per-job RAS port is taken from [nccl_ras_port_first, _last].
    bool nccl_env = false;
    std::string nccl_inspector_plugin;  // absolute path of the Inspector profiler plugin, "" = none
    unsigned nccl_ras_port_first = 28100;
    unsigned nccl_ras_port_last = 29123;
    // PyTorch flight-recorder variables (spank/flight_recorder_env.h): on unless flight_recorder=0; never
    // over a variable the job set, none at all when the job set its own buffer size.
    bool flight_recorder = true;
    // Test seams (STALLSCOPE_*_ROOT, STALLSCOPE_NVML_LIBRARY, ...; helper_spec.h) make the helper load
    // user-chosen code or read user-chosen files as fact: taken from a job's environment only when the
    // admin sets allow_test_env=1 (test clusters).
    bool allow_test_env = false;
    // Absolute path of scontrol, run as root: must be a root-owned regular file in root-owned
    // directories that nobody else can write (check_root_owned_program in process.h).
    std::string scontrol = "/usr/bin/scontrol";
    // Absolute path of the program that prints the job record as JSON when run as
    // `<job_reader> --json show job <id>` (job_record.h), run as root before each AdminComment write and
    // checked like scontrol: stallscope-slurm-job (spank/slurm_job.cc, libslurm's slurm_load_job; set
    // from STALLSCOPE_SPANK_DEFAULT_JOB_READER by default_config()), or scontrol on Slurm >= 23.02.
    std::string job_reader;
    // Timeline format the helper writes: 2 = timeline.*.jsonl.zst (changes only, zstd; ~30x smaller),
    // 1 = timeline.*.jsonl (every counter every sample) for sites whose own tools read the plain lines.
    unsigned timeline_format = 2;
};

// Slurm commands one job comment write runs at most (scontrol ping, the job reader, scontrol update).
inline constexpr unsigned kScontrolCallsPerComment = 3;
// Worst-case seconds of the last task_exit for this configuration (see task_exit_budget).
unsigned task_exit_worst_case(const PluginConfig& config);

PluginConfig default_config();

struct ConfigParse {
    PluginConfig config;              // defaults for every key that was missing or bad
    std::vector<std::string> errors;  // one message per bad argument, naming it
};

// Parses plugstack.conf arguments (`key=value` each). Unknown keys, missing '=', bad numbers and
// inconsistent ranges are reported in errors; the affected setting keeps its default.
ConfigParse parse_plugin_args(const std::vector<std::string_view>& args);

// Strict decimal parse of a whole string into [lo, hi]; no sign, no spaces, no suffix.
bool parse_uint(std::string_view text, unsigned lo, unsigned hi, unsigned* out);
// A umask as Slurm passes it in SLURM_UMASK ("0022"): 1 to 4 octal digits, at most 0777.
bool parse_umask(std::string_view text, mode_t* out);

}  // namespace stallscope::spank
