#include "spank/epilog.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

#include "spank/escape.h"
#include "spank/helper_spec.h"
#include "spank/job_writer.h"
#include "spank/process.h"
#include "spank/state.h"

namespace stallscope::spank {

namespace {

bool newer(const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

bool starts_with(const char* name, const char* prefix) {
    return std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}

// open(path, O_DIRECTORY) from / one component at a time, never following a symlink (O_NOFOLLOW on every
// component, not only the last). -1 on any failure, ".." included. Async-signal-safe.
int open_dir_nofollow(const char* path) {
    if (path[0] != '/') return -1;
    int fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char name[NAME_MAX + 1];
    for (const char* p = path; fd >= 0;) {
        while (*p == '/') ++p;
        if (*p == '\0') break;
        std::size_t n = 0;
        while (p[n] != '\0' && p[n] != '/') ++n;
        if (n > NAME_MAX || (n == 2 && p[0] == '.' && p[1] == '.')) {
            ::close(fd);
            return -1;
        }
        std::memcpy(name, p, n);
        name[n] = '\0';
        p += n;
        const int next = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        ::close(fd);
        fd = next;
    }
    return fd;
}

struct LinuxDirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

struct StaleArgs {
    const char* dir;
    long deadline_ms;
    std::size_t max_entries;
};

int staleness_child(const void* arg) {
    const auto* a = static_cast<const StaleArgs*>(arg);
    return static_cast<int>(summary_staleness(a->dir, a->deadline_ms, a->max_entries));
}

std::string where(const std::string& job_id) {
    return "stallscope: job " + job_id + ": ";
}

void summarize(const PluginConfig& config, const std::string& job_id, const Credentials& user,
               const std::string& dir, long deadline_ms, const EpilogLog& log) {
    const long left_s = (deadline_ms - monotonic_ms()) / 1000;
    if (left_s <= 0) {
        log.error(where(job_id) + "epilog_timeout=" + std::to_string(config.epilog_timeout) +
                  "s spent; not summarizing " + shown(dir));
        return;
    }
    const std::vector<std::string> env = {"PATH=" + std::string(kHelperPath), "SLURM_JOB_ID=" + job_id};
    const CommandResult r =
        run_command(summarize_argv(config, dir), env, user, static_cast<unsigned>(left_s));
    const std::string what = shown(config.helper) + " summarize " + shown(dir);
    if (!r.started)
        log.error(where(job_id) + "cannot run " + what + ": " + shown(r.error));
    else if (r.timed_out)
        log.error(where(job_id) + what +
                  " killed at the epilog_timeout=" + std::to_string(config.epilog_timeout) + "s deadline");
    else if (r.exit_code != 0)
        log.error(where(job_id) + what + " exited with " + std::to_string(r.exit_code) + ": " +
                  shown(r.output.substr(0, r.output.find('\n')), 300));
    else
        log.info(where(job_id) + "epilog summarized " + shown(dir));
}

// The staleness check runs in a forked child as the job user, bounded by the hook's deadline (L5): root
// never walks or stats the job's directories itself, and a hung file system costs the deadline, no more.
void summarize_if_stale(const PluginConfig& config, const std::string& job_id, const Credentials& user,
                        const std::string& dir, long deadline_ms, const EpilogLog& log) {
    if (monotonic_ms() >= deadline_ms) {
        log.error(where(job_id) + "epilog_timeout=" + std::to_string(config.epilog_timeout) +
                  "s spent; not checking " + shown(dir));
        return;
    }
    const StaleArgs args{dir.c_str(), deadline_ms, kStaleScanMaxEntries};
    const int answer = run_forked_as(user, deadline_ms, staleness_child, &args);
    if (answer == static_cast<int>(Staleness::current)) {
        log.verbose(where(job_id) + shown(dir) + "/summary.json is current; not summarizing");
        return;
    }
    if (answer == static_cast<int>(Staleness::missing)) {
        log.verbose(where(job_id) + "no directory " + shown(dir) + "; not summarizing");
        return;
    }
    if (answer != static_cast<int>(Staleness::stale))
        log.verbose(where(job_id) + "cannot tell whether " + shown(dir) +
                    "/summary.json is current (a symlink in the path, too many entries, not readable, or "
                    "out of time); summarizing");
    summarize(config, job_id, user, dir, deadline_ms, log);
}

void summarize_job(const PluginConfig& config, const std::string& job_id, uid_t uid, long deadline_ms,
                   const EpilogLog& log) {
    std::string err;
    const std::optional<std::string> text = read_root_file(state_path(config.run_dir, job_id), &err);
    if (!text) {
        if (!err.empty()) log.error(where(job_id) + shown(err));
        return;  // stallscope was not used for this job on this node (or its state is unusable)
    }
    const std::optional<JobState> state = parse_state(*text);
    std::string ignored;
    const bool writer_node = read_root_file(writer_mark_path(config.run_dir, job_id), &ignored).has_value();
    if (!state || state->uid != uid) {
        log.error(where(job_id) + "malformed state file " + shown(state_path(config.run_dir, job_id)) +
                  "; not summarizing");
        return;
    }
    if (!writer_node) return;
    Credentials user{state->uid, state->gid, state->groups, state->umask};
    if (user.groups.empty()) user.groups.push_back(user.gid);
    // Every output directory a step of this job used (output_dir=cwd with srun --chdir differs).
    const std::vector<std::string> dirs = all_out_dirs(*state);
    for (const std::string& dir : dirs) summarize_if_stale(config, job_id, user, dir, deadline_ms, log);
    const std::optional<std::string> fallback = read_root_file(result_path(config.run_dir, job_id), &err);
    if (fallback && std::find(dirs.begin(), dirs.end(), *fallback) == dirs.end()) {
        if (accepted_fallback_dir(*fallback, state->uid, state->out_dir))
            summarize_if_stale(config, job_id, user, *fallback, deadline_ms, log);
        else if (!fallback->empty())
            log.error(where(job_id) + "not summarizing " + shown(*fallback) +
                      ": not the helper's fallback form <tmp>/stallscope-" + std::to_string(state->uid) +
                      "/<leaf of " + shown(state->out_dir) + ">");
    }
}

}  // namespace

Staleness summary_staleness(const char* dir, long deadline_ms, std::size_t max_entries) {
    if (monotonic_ms() >= deadline_ms) return Staleness::unknown;
    const int fd = open_dir_nofollow(dir);
    if (fd < 0) return errno == ENOENT ? Staleness::missing : Staleness::unknown;
    struct stat summary {};
    const bool have_summary = ::fstatat(fd, "summary.json", &summary, AT_SYMLINK_NOFOLLOW) == 0;
    alignas(LinuxDirent64) char buf[16384];
    std::size_t seen = 0;
    Staleness answer = Staleness::current;
    while (answer == Staleness::current) {
        const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0 || monotonic_ms() >= deadline_ms) {
            answer = Staleness::unknown;
            break;
        }
        for (long at = 0; at < n && answer == Staleness::current;) {
            const auto* e = reinterpret_cast<const LinuxDirent64*>(buf + at);
            at += e->d_reclen;
            if (++seen > max_entries) {
                answer = Staleness::unknown;
                break;
            }
            if (!starts_with(e->d_name, "verdict.") && !starts_with(e->d_name, "timeline.")) continue;
            struct stat st {};
            if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
            if (!have_summary || newer(st.st_mtim, summary.st_mtim)) answer = Staleness::stale;
        }
    }
    ::close(fd);
    return answer;
}

void run_job_epilog(const PluginConfig& config, const std::string& job_id, uid_t uid, const EpilogLog& log) {
    const long deadline_ms = monotonic_ms() + 1000L * config.epilog_timeout;  // one deadline for the hook
    try {
        summarize_job(config, job_id, uid, deadline_ms, log);
    } catch (const std::exception& e) {
        log.error(where(job_id) + "epilog: " + shown(e.what()));
    }
    // On every node, whatever the state said: nothing a job can do to its state skips this.
    // <run_dir>/<jobid>/ held the user-owned sampler lock in older versions: remove a leftover.
    const std::string err = remove_tree(job_run_dir(config, job_id));
    if (!err.empty()) log.error(where(job_id) + shown(err));
    for (const std::string& path :
         {state_path(config.run_dir, job_id), result_path(config.run_dir, job_id),
          comment_mark_path(config.run_dir, job_id), lock_path(config.run_dir, job_id),
          batch_mark_path(config.run_dir, job_id), writer_mark_path(config.run_dir, job_id)})
        ::unlink(path.c_str());
}

}  // namespace stallscope::spank
