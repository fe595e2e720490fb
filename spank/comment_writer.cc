// Writing the segment into the job's comment with scontrol (fork/execv, the admin's absolute
// `scontrol=` path, checked root-owned and not writable by others; explicit environment; one deadline
// for all calls). No libslurm inside slurmstepd.
//
// Reading the current AdminComment on 22.05: `squeue -O` has no AdminComment field, `scontrol` has no
// --json, and `squeue --json` ignores -j and dumps every job. `scontrol show job <id>` prints
// AdminComment on its own line, but user-controlled fields can contain newlines and forge that line,
// and the one-liner `scontrol show job -o <id>` has user-controlled fields on both sides of it. The
// value is read from one anchored place and cross-checked against the one-liner (comment.h); when that
// fails we leave AdminComment alone.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "spank/comment.h"
#include "spank/plugin.h"
#include "spank/process.h"

namespace stallscope::spank {

namespace {

// scontrol's environment: a fixed PATH and the daemon's own SLURM_CONF (slurmstepd inherits it from
// slurmd, so it is root-controlled; never the job's).
std::vector<std::string> scontrol_env() {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    if (const char* conf = std::getenv("SLURM_CONF")) env.push_back(std::string("SLURM_CONF=") + conf);
    return env;
}

std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

// Each call gets scontrol_timeout or what is left of the comment write's deadline, whichever is less,
// keeping 1 s for the kill and reap after a timeout (run_command's bound, process.h).
std::string run_scontrol(const PluginConfig& config, long deadline_ms, const std::vector<std::string>& argv,
                         std::string* output) {
    long left_s = (deadline_ms - monotonic_ms()) / 1000 - 1;
    if (left_s < 1) return argv[0] + " " + argv[1] + " not run: the job comment write is out of time";
    unsigned timeout = std::min<unsigned>(config.scontrol_timeout, static_cast<unsigned>(left_s));
    CommandResult r = run_command(argv, scontrol_env(), std::nullopt, timeout, true);
    if (!r.started) return "cannot run " + argv[0] + ": " + r.error;
    if (r.timed_out) return argv[0] + " " + argv[1] + " timed out after " + std::to_string(timeout) + " s";
    if (r.exit_code != 0)
        return argv[0] + " " + argv[1] + " exited with " + std::to_string(r.exit_code) + " " + r.error +
               ": " + first_line(r.output);
    if (output) *output = r.output;
    return "";
}

}  // namespace

std::string write_job_comment(const PluginConfig& config, const std::string& job_id,
                              const std::string& segment, const std::string& update_id) {
    const std::string& scontrol = config.scontrol;
    if (std::string unsafe = check_root_owned_program(scontrol); !unsafe.empty())
        return "not running scontrol as root: " + unsafe + " (set scontrol= in plugstack.conf)";
    // One deadline for all calls of this write: task_exit_worst_case (config.h) stays within the budget.
    const long deadline = monotonic_ms() + 1000L * kScontrolCallsPerComment * (config.scontrol_timeout + 1);
    // With slurmctld down every scontrol call retries its connect for ~18 s (22.05, measured) and
    // would hold the step's end for scontrol_timeout; `scontrol ping` says DOWN in milliseconds.
    std::string down = run_scontrol(config, deadline, {scontrol, "ping"}, nullptr);
    if (!down.empty())
        return "slurmctld is not responding (" + down +
               "); left to the post-job path (contrib/slurm/slurmctld-epilog.sh)";
    std::string value;
    if (config.comment == CommentTarget::user) {
        value = segment;  // documented: replaces what the user gave with --comment
    } else {
        std::string multi, one;
        std::string err = run_scontrol(config, deadline, {scontrol, "show", "job", job_id}, &multi);
        if (err.empty()) err = run_scontrol(config, deadline, {scontrol, "show", "job", "-o", job_id}, &one);
        if (!err.empty()) return err;
        ScontrolAdminComment current = parse_scontrol_admin_comment(multi, one, job_id);
        if (current.state == AdminCommentRead::ambiguous)
            return "cannot read the current AdminComment unambiguously (a job field contains a newline); "
                   "leaving it unchanged";
        std::optional<std::string> merged = merge_comment(current.value, segment);
        if (!merged) return "AdminComment is already near the 1024-character cap; leaving it unchanged";
        if (*merged == current.value) return "";
        value = *merged;
    }
    std::string field = config.comment == CommentTarget::user ? "Comment=" : "AdminComment=";
    return run_scontrol(
        config, deadline,
        {scontrol, "update", "JobId=" + (update_id.empty() ? job_id : update_id), field + value}, nullptr);
}

}  // namespace stallscope::spank
