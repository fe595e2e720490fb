// Writing the segment into the job's comment (fork/execv, the admin's absolute `scontrol=` and
// `job_reader=` paths, each checked root-owned and not writable by others; explicit environment; one
// deadline for all calls). No libslurm inside slurmstepd: the job record is read by a child.
//
// Reading the current AdminComment: the job reader (`job_reader=`, default stallscope-slurm-job, built
// from spank/slurm_job.cc against the cluster's libslurm; `scontrol` itself on Slurm >= 23.02) prints the
// job record as JSON, so every field is delimited unambiguously whatever the job put in its name,
// comment or work dir (job_record.h). The text forms of `scontrol show job` are never parsed any more:
// their fields are not delimited (issue 17, issue 36 M1).
#include "spank/comment_writer.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "spank/comment.h"
#include "spank/escape.h"
#include "spank/job_record.h"
#include "spank/process.h"

namespace stallscope::spank {

namespace {

// The children's environment: a fixed PATH and the daemon's own SLURM_CONF (slurmstepd inherits it from
// slurmd, so it is root-controlled; never the job's).
std::vector<std::string> slurm_env() {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    if (const char* conf = std::getenv("SLURM_CONF")) env.push_back(std::string("SLURM_CONF=") + conf);
    return env;
}

std::string first_line(const std::string& text) {
    return shown(text.substr(0, text.find('\n')), 200);
}

// Each call gets scontrol_timeout or what is left of the comment write's deadline, whichever is less,
// keeping 1 s for the kill and reap after a timeout (run_command's bound, process.h).
std::string run_slurm_command(const PluginConfig& config, long deadline_ms,
                              const std::vector<std::string>& argv, std::string* output,
                              bool stdout_only = false) {
    const std::string what = shown(argv[0]) + " " + argv[1];
    long left_s = (deadline_ms - monotonic_ms()) / 1000 - 1;
    if (left_s < 1) return what + " not run: the job comment write is out of time";
    unsigned timeout = std::min<unsigned>(config.scontrol_timeout, static_cast<unsigned>(left_s));
    CommandResult r = run_command(argv, slurm_env(), std::nullopt, timeout, true, stdout_only);
    if (!r.started) return "cannot run " + shown(argv[0]) + ": " + shown(r.error);
    if (r.timed_out) return what + " timed out after " + std::to_string(timeout) + " s";
    if (output) *output = r.output;
    if (r.exit_code != 0) {
        if (stdout_only) return what + " exited with " + std::to_string(r.exit_code) + " " + shown(r.error);
        return what + " exited with " + std::to_string(r.exit_code) + " " + shown(r.error) + ": " +
               first_line(r.output);
    }
    return "";
}

}  // namespace

std::string write_job_comment(const PluginConfig& config, const std::string& job_id,
                              const std::string& segment, const std::string& update_id) {
    const std::string& scontrol = config.scontrol;
    if (std::string unsafe = check_root_owned_program(scontrol); !unsafe.empty())
        return "not running scontrol as root: " + shown(unsafe) + " (set scontrol= in plugstack.conf)";
    // One deadline for all calls of this write: task_exit_worst_case (config.h) stays within the budget.
    const long deadline = monotonic_ms() + 1000L * kScontrolCallsPerComment * (config.scontrol_timeout + 1);
    // With slurmctld down every scontrol call retries its connect for ~18 s (22.05, measured) and
    // would hold the step's end for scontrol_timeout; `scontrol ping` says DOWN in milliseconds.
    std::string down = run_slurm_command(config, deadline, {scontrol, "ping"}, nullptr);
    if (!down.empty())
        return "slurmctld is not responding (" + down +
               "); left to the post-job path (contrib/slurm/slurmctld-epilog.sh)";
    std::string value;
    if (config.comment == CommentTarget::user) {
        value = segment;  // documented: replaces what the user gave with --comment
    } else {
        if (std::string unsafe = check_root_owned_program(config.job_reader); !unsafe.empty())
            return "not running the job reader as root: " + shown(unsafe) +
                   " (set job_reader= in plugstack.conf)";
        std::string record;
        std::string err =
            run_slurm_command(config, deadline, {config.job_reader, "--json", "show", "job", job_id}, &record,
                              /*stdout_only=*/true);
        JobAdminComment current = parse_job_record_json(record, job_id);
        if (!err.empty())
            return err + (current.why.empty() ? "" : " (" + current.why + ")") +
                   "; leaving AdminComment unchanged";
        if (current.state == AdminCommentRead::ambiguous)
            return "cannot read the current AdminComment: " + current.why + "; leaving it unchanged";
        std::optional<std::string> merged = merge_comment(current.value, segment);
        if (!merged) return "AdminComment is already near the 1024-character cap; leaving it unchanged";
        if (*merged == current.value) return "";
        value = *merged;
    }
    std::string field = config.comment == CommentTarget::user ? "Comment=" : "AdminComment=";
    return run_slurm_command(
        config, deadline,
        {scontrol, "update", "JobId=" + (update_id.empty() ? job_id : update_id), field + value}, nullptr);
}

}  // namespace stallscope::spank
