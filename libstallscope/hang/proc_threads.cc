#include "libstallscope/hang/proc_threads.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>

#include "libstallscope/hang/environ_block.h"
#include "libstallscope/model/json_fields.h"
#include "libstallscope/util/counter_file.h"

namespace stallscope {
namespace {

std::optional<std::uint64_t> to_u64(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::optional<int> to_small_int(std::string_view s) {
    const auto v = to_u64(s);
    if (!v || *v > 10'000'000) return std::nullopt;
    return static_cast<int>(*v);
}

// The thread ids of one process, main thread (tid == pid) first; at most `room`.
std::vector<pid_t> list_tasks(const std::string& dir, pid_t pid, std::size_t room, bool& truncated) {
    std::vector<pid_t> tids;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return tids;
    while (const dirent* e = ::readdir(d)) {
        const auto tid = to_u64(e->d_name);
        if (!tid || *tid == 0 || *tid > 0x7fffffff) continue;
        if (tids.size() >= room) {
            truncated = true;
            break;
        }
        tids.push_back(static_cast<pid_t>(*tid));
    }
    ::closedir(d);
    std::sort(tids.begin(), tids.end(),
              [pid](pid_t a, pid_t b) { return (a == pid) != (b == pid) ? a == pid : a < b; });
    return tids;
}

struct Pass {
    std::optional<TaskStat> stat;
    std::string wchan;
};

Pass read_task(const std::string& task_dir, bool with_wchan) {
    Pass p;
    std::string error;
    if (auto text = read_text_file(task_dir + "/stat", error, 4096)) p.stat = parse_task_stat(*text);
    if (with_wchan) {
        if (auto text = read_text_file(task_dir + "/wchan", error, 256)) {
            p.wchan = text->substr(0, text->find('\n'));
            if (p.wchan == "0") p.wchan.clear();  // running, or not resolvable on this kernel
        }
    }
    return p;
}

}  // namespace

std::optional<TaskStat> parse_task_stat(std::string_view text) {
    const std::size_t open = text.find('(');
    const std::size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
        return std::nullopt;
    TaskStat s;
    s.comm.assign(text.substr(open + 1, std::min<std::size_t>(close - open - 1, 64)));
    // Fields after ')': state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    // utime(14) stime(15): tokens 0, 11 and 12.
    std::string_view rest = text.substr(close + 1);
    std::string_view tokens[13];
    std::size_t n = 0;
    std::size_t i = 0;
    while (n < 13 && i < rest.size()) {
        while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
        const std::size_t start = i;
        while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
        if (i > start) tokens[n++] = rest.substr(start, i - start);
    }
    if (n < 13 || tokens[0].size() != 1) return std::nullopt;
    s.state = tokens[0][0];
    const auto utime = to_u64(tokens[11]);
    const auto stime = to_u64(tokens[12]);
    if (!utime || !stime) return std::nullopt;
    s.utime_ticks = *utime;
    s.stime_ticks = *stime;
    return s;
}

RankIdentity rank_from_environ(std::string_view block) {
    RankIdentity id;
    int rank_priority = 99, local_priority = 99;
    static constexpr std::string_view kRankVars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                                     "PMI_RANK"};
    static constexpr std::string_view kLocalVars[] = {"LOCAL_RANK", "SLURM_LOCALID"};
    for_each_environ_entry(block, [&](std::string_view name, std::string_view value) {
        for (int k = 0; k < 4; ++k)
            if (name == kRankVars[k] && k < rank_priority)
                if (auto v = to_small_int(value)) {
                    id.rank = *v;
                    id.source = std::string(name);
                    rank_priority = k;
                }
        for (int k = 0; k < 2; ++k)
            if (name == kLocalVars[k] && k < local_priority)
                if (auto v = to_small_int(value)) {
                    id.local_rank = *v;
                    local_priority = k;
                }
    });
    return id;
}

std::vector<pid_t> parse_cgroup_procs(std::string_view text, std::size_t max_pids) {
    std::vector<pid_t> pids;
    while (!text.empty() && pids.size() < max_pids) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        const auto v = to_u64(text.substr(0, end));
        if (v && *v > 0 && *v <= 0x7fffffff) pids.push_back(static_cast<pid_t>(*v));
        text.remove_prefix(end == text.size() ? end : end + 1);
    }
    return pids;
}

namespace {

void collect_cgroup_pids(const std::string& dir, int depth, std::size_t max_pids, std::vector<pid_t>& out) {
    std::string error;
    if (auto text = read_text_file(dir + "/cgroup.procs", error, 64 * 1024))
        for (const pid_t pid : parse_cgroup_procs(*text, max_pids - out.size())) out.push_back(pid);
    if (depth >= 6 || out.size() >= max_pids) return;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    std::vector<std::string> children;
    while (const dirent* e = ::readdir(d))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') children.push_back(e->d_name);
    ::closedir(d);
    std::sort(children.begin(), children.end());
    for (const auto& c : children) {
        if (out.size() >= max_pids) break;
        collect_cgroup_pids(dir + "/" + c, depth + 1, max_pids, out);
    }
}

}  // namespace

std::vector<pid_t> pids_in_cgroup_tree(const std::string& cgroup_dir, std::size_t max_pids) {
    std::vector<pid_t> out;
    collect_cgroup_pids(cgroup_dir, 0, max_pids, out);
    return out;
}

std::vector<pid_t> pids_of_job_by_environ(const std::string& proc_root, uid_t uid, std::string_view job_id,
                                          std::string_view host, pid_t skip, std::size_t max_pids,
                                          std::size_t max_entries) {
    std::vector<pid_t> all, on_host;
    if (job_id.empty()) return all;
    auto short_name = [](std::string_view name) { return name.substr(0, name.find('.')); };
    const std::string_view host_short = short_name(host);
    DIR* d = ::opendir(proc_root.c_str());
    if (!d) return all;
    std::size_t seen = 0;
    while (const dirent* e = ::readdir(d)) {
        if (++seen > max_entries || all.size() >= max_pids) break;
        const auto pid = to_small_int(e->d_name);
        if (!pid || *pid <= 0 || *pid == skip) continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != uid) continue;
        std::string error;
        const auto env = read_text_file(proc_root + "/" + e->d_name + "/environ", error, 256 * 1024);
        if (!env) continue;  // gone, or not ours to read
        bool job = false, here = false;
        for_each_environ_entry(*env, [&](std::string_view name, std::string_view value) {
            if (name == "SLURM_JOB_ID") job = job || value == job_id;
            if (name == "SLURMD_NODENAME") here = !host_short.empty() && short_name(value) == host_short;
        });
        if (!job) continue;
        all.push_back(static_cast<pid_t>(*pid));
        if (here) on_host.push_back(static_cast<pid_t>(*pid));
    }
    ::closedir(d);
    std::vector<pid_t>& out = on_host.empty() ? all : on_host;
    std::sort(out.begin(), out.end());
    return out;
}

const char* to_string(ThreadActivity a) {
    switch (a) {
        case ThreadActivity::spinning:
            return "spinning";
        case ThreadActivity::runnable:
            return "runnable";
        case ThreadActivity::futex_wait:
            return "futex_wait";
        case ThreadActivity::io_wait:
            return "io_wait";
        case ThreadActivity::sleeping:
            return "sleeping";
        case ThreadActivity::stopped:
            return "stopped";
        case ThreadActivity::exited:
            return "exited";
        case ThreadActivity::unknown:
            break;
    }
    return "unknown";
}

ThreadActivity classify_thread(char state, std::string_view wchan, double cpu_share) {
    // A thread that used most of the interval's CPU is spinning whatever its state at the instant read
    // (a CUDA stream sync busy-polls; a rank waiting inside a collective looks like this).
    if (cpu_share >= 0.5) return ThreadActivity::spinning;
    switch (state) {
        case 'R':
            return ThreadActivity::runnable;
        case 'D':
            return ThreadActivity::io_wait;
        case 'S':
        case 'I':
            return wchan.find("futex") != std::string_view::npos ? ThreadActivity::futex_wait
                                                                 : ThreadActivity::sleeping;
        case 'T':
        case 't':
            return ThreadActivity::stopped;
        case 'Z':
        case 'X':
            return ThreadActivity::exited;
        default:
            return ThreadActivity::unknown;
    }
}

ProcEvidence sample_job_threads(const std::string& proc_root, const std::vector<pid_t>& pids,
                                const ProcLimits& limits) {
    ProcEvidence out;
    const long ticks = std::max(1L, ::sysconf(_SC_CLK_TCK));
    std::vector<std::vector<Pass>> first;
    const pid_t self = ::getpid();
    for (const pid_t pid : pids) {
        if (pid == self) continue;  // the helper itself is no evidence
        if (out.processes.size() >= limits.max_processes || out.threads >= limits.max_threads) {
            out.truncated = true;
            break;
        }
        ProcessEvidence p;
        p.pid = pid;
        const std::string dir = proc_root + "/" + std::to_string(pid);
        std::string error;
        // environ is READ-class, but reading it takes the target's mmap lock: a process stuck in a page
        // fault can block this read. The capture runs on its own thread for that reason (hang_capture.h).
        if (auto env = read_text_file(dir + "/environ", error, 256 * 1024)) p.rank = rank_from_environ(*env);
        const auto tids = list_tasks(dir + "/task", pid, limits.max_threads - out.threads, out.truncated);
        if (tids.empty()) {
            p.gone = true;
            out.processes.push_back(std::move(p));
            first.emplace_back();
            continue;
        }
        std::vector<Pass> passes;
        for (const pid_t tid : tids) {
            passes.push_back(read_task(dir + "/task/" + std::to_string(tid), false));
            ThreadEvidence t;
            t.tid = tid;
            p.threads.push_back(std::move(t));
        }
        out.threads += tids.size();
        out.processes.push_back(std::move(p));
        first.push_back(std::move(passes));
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(limits.gap_seconds));
    const double gap = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t i = 0; i < out.processes.size(); ++i) {
        ProcessEvidence& p = out.processes[i];
        const std::string dir = proc_root + "/" + std::to_string(p.pid) + "/task/";
        bool any = false;
        for (std::size_t k = 0; k < p.threads.size(); ++k) {
            ThreadEvidence& t = p.threads[k];
            const Pass before = first[i][k];
            const Pass after = read_task(dir + std::to_string(t.tid), true);
            if (before.stat) {
                t.comm = before.stat->comm;
                t.state_first = before.stat->state;
            }
            if (!after.stat) {
                t.activity = ThreadActivity::exited;
                continue;
            }
            any = true;
            t.comm = after.stat->comm;
            t.state_second = after.stat->state;
            t.wchan = after.wchan;
            if (before.stat) {
                const auto du =
                    after.stat->utime_ticks - std::min(after.stat->utime_ticks, before.stat->utime_ticks);
                const auto ds =
                    after.stat->stime_ticks - std::min(after.stat->stime_ticks, before.stat->stime_ticks);
                t.user_seconds = static_cast<double>(du) / static_cast<double>(ticks);
                t.cpu_seconds = static_cast<double>(du + ds) / static_cast<double>(ticks);
            }
            t.activity = classify_thread(t.state_second, t.wchan, gap > 0 ? t.cpu_seconds / gap : 0);
            if (t.state_second == 'D') ++p.threads_in_d;
        }
        if (!p.threads.empty()) p.comm = p.threads.front().comm;
        p.gone = !any;
    }
    out.gap_seconds = gap;
    if (out.truncated)
        out.warnings.push_back("/proc sweep stopped at " + std::to_string(out.processes.size()) +
                               " processes, " + std::to_string(out.threads) + " threads (limits)");
    return out;
}

Json to_json(const ProcEvidence& e) {
    using json_fields::put;
    Json processes = Json::array();
    for (const auto& p : e.processes) {
        Json threads = Json::array();
        for (const auto& t : p.threads) {
            Json j = json_fields::object_of(8);
            put(j, "tid", t.tid);
            put(j, "comm", t.comm);
            put(j, "state", std::string{t.state_first} + std::string{t.state_second});
            put(j, "wchan", t.wchan.empty() ? Json(nullptr) : Json(t.wchan));
            put(j, "cpu_seconds", t.cpu_seconds);
            put(j, "user_seconds", t.user_seconds);
            put(j, "activity", to_string(t.activity));
            threads.push_back(std::move(j));
        }
        Json j = json_fields::object_of(8);
        put(j, "pid", p.pid);
        put(j, "comm", p.comm);
        put(j, "rank", p.rank.rank >= 0 ? Json(p.rank.rank) : Json(nullptr));
        put(j, "local_rank", p.rank.local_rank >= 0 ? Json(p.rank.local_rank) : Json(nullptr));
        put(j, "rank_from", p.rank.source);
        put(j, "gone", p.gone);
        put(j, "threads_in_d", p.threads_in_d);
        put(j, "threads", std::move(threads));
        processes.push_back(std::move(j));
    }
    Json j = json_fields::object_of(5);
    put(j, "gap_seconds", e.gap_seconds);
    put(j, "threads", e.threads);
    put(j, "truncated", e.truncated);
    put(j, "processes", std::move(processes));
    put(j, "warnings", e.warnings);
    return j;
}

}  // namespace stallscope
