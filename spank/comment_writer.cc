// Writing the segment into the job's comment with scontrol (fork/execv, absolute path from fixed
// directories, explicit environment, bounded time). No libslurm inside slurmstepd.
//
// Reading the current AdminComment on 22.05: `squeue -O` has no AdminComment field, `scontrol` has no
// --json, and `squeue --json` ignores -j and dumps every job. `scontrol show job <id>` prints
// AdminComment on its own line, but user-controlled fields can contain newlines and forge that line,
// so we also run `scontrol show job -o <id>` and trust the multi-line parse only when the one-liner
// really is one line (comment.h). When it is not, we leave AdminComment alone.
#include <cstdlib>
#include <string>
#include <vector>

#include "spank/comment.h"
#include "spank/plugin.h"
#include "spank/process.h"

namespace stallscope::spank {

namespace {

const std::vector<std::string> kSlurmBinDirs = {"/usr/bin", "/usr/local/bin", "/bin", "/opt/slurm/bin",
                                                "/usr/local/slurm/bin"};

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

std::string run_scontrol(const PluginConfig& config, const std::vector<std::string>& argv,
                         std::string* output) {
    CommandResult r = run_command(argv, scontrol_env(), std::nullopt, config.scontrol_timeout, true);
    if (!r.started) return "cannot run " + argv[0] + ": " + r.error;
    if (r.timed_out)
        return argv[0] + " " + argv[1] + " timed out after " + std::to_string(config.scontrol_timeout) + " s";
    if (r.exit_code != 0)
        return argv[0] + " " + argv[1] + " exited with " + std::to_string(r.exit_code) + " " + r.error +
               ": " + first_line(r.output);
    if (output) *output = r.output;
    return "";
}

}  // namespace

std::string write_job_comment(const PluginConfig& config, const std::string& job_id,
                              const std::string& segment) {
    std::string scontrol = find_program("scontrol", kSlurmBinDirs);
    if (scontrol.empty()) return "scontrol not found in /usr/bin, /usr/local/bin, /bin, /opt/slurm/bin";
    // With slurmctld down every scontrol call retries its connect for ~18 s (22.05, measured) and
    // would hold the step's end for scontrol_timeout; `scontrol ping` says DOWN in milliseconds.
    std::string down = run_scontrol(config, {scontrol, "ping"}, nullptr);
    if (!down.empty())
        return "slurmctld is not responding (" + down +
               "); left to the post-job path (contrib/slurm/slurmctld-epilog.sh)";
    std::string value;
    if (config.comment == CommentTarget::user) {
        value = segment;  // documented: replaces what the user gave with --comment
    } else {
        std::string multi, one;
        std::string err = run_scontrol(config, {scontrol, "show", "job", job_id}, &multi);
        if (err.empty()) err = run_scontrol(config, {scontrol, "show", "job", "-o", job_id}, &one);
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
    return run_scontrol(config, {scontrol, "update", "JobId=" + job_id, field + value}, nullptr);
}

}  // namespace stallscope::spank
