// The /proc sweep on real processes: one blocked in a futex, one sleeping (exec'd with a rank in its
// environment), one spinning; and the parsers on what the kernel writes and on garbage.
#include <doctest/doctest.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "libstallscope/hang/proc_threads.h"

using namespace stallscope;

namespace {

// A child of this test, killed and reaped at scope exit (our own child: the sweep under test never
// signals anything).
struct Child {
    pid_t pid = -1;
    ~Child() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

pid_t fork_futex_waiter() {
    const pid_t pid = ::fork();
    if (pid == 0) {
        static int word = 0;
        while (true) ::syscall(SYS_futex, &word, FUTEX_WAIT, 0, nullptr, nullptr, 0);
    }
    return pid;
}

pid_t fork_spinner() {
    const pid_t pid = ::fork();
    if (pid == 0) {
        volatile unsigned long n = 0;
        while (true) n = n + 1;
    }
    return pid;
}

pid_t exec_sleeper_with_rank() {
    const pid_t pid = ::fork();
    if (pid == 0) {
        char sleep_path[] = "/bin/sleep", seconds[] = "60";
        char rank[] = "RANK=3", local_rank[] = "LOCAL_RANK=1", procid[] = "SLURM_PROCID=7";
        char* argv[] = {sleep_path, seconds, nullptr};
        char* envp[] = {procid, rank, local_rank, nullptr};
        ::execve(sleep_path, argv, envp);
        ::_exit(127);
    }
    return pid;
}

const ProcessEvidence* find(const ProcEvidence& e, pid_t pid) {
    for (const auto& p : e.processes)
        if (p.pid == pid) return &p;
    return nullptr;
}

}  // namespace

TEST_CASE("two passes over real processes: futex wait, sleep with its rank, spinning") {
    Child futex{fork_futex_waiter()}, sleeper{exec_sleeper_with_rank()}, spinner{fork_spinner()};
    REQUIRE(futex.pid > 0);
    REQUIRE(sleeper.pid > 0);
    REQUIRE(spinner.pid > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the sleeper exec, all settle

    ProcLimits limits;
    limits.gap_seconds = 0.5;
    const ProcEvidence e =
        sample_job_threads("/proc", {futex.pid, sleeper.pid, spinner.pid, ::getpid(), 999999999}, limits);
    CHECK(e.gap_seconds >= 0.5);
    CHECK_FALSE(find(e, ::getpid()));  // the sampler never counts itself

    const ProcessEvidence* f = find(e, futex.pid);
    REQUIRE(f);
    REQUIRE(f->main_thread());
    CHECK(f->main_thread()->state_second == 'S');
    // wchan is "futex_wait_queue" (6.x) / "futex_wait_queue_me" (5.x); kernels that hide it give "".
    if (!f->main_thread()->wchan.empty()) {
        CHECK(f->main_thread()->wchan.find("futex") != std::string::npos);
        CHECK(f->main_thread()->activity == ThreadActivity::futex_wait);
    }
    CHECK(f->main_thread()->cpu_seconds < 0.1);

    const ProcessEvidence* s = find(e, sleeper.pid);
    REQUIRE(s);
    CHECK(s->rank.rank == 3);  // RANK wins over SLURM_PROCID
    CHECK(s->rank.source == "RANK");
    CHECK(s->rank.local_rank == 1);
    CHECK(s->comm == "sleep");
    REQUIRE(s->main_thread());
    CHECK(s->main_thread()->state_second == 'S');
    CHECK(s->main_thread()->activity == ThreadActivity::sleeping);

    const ProcessEvidence* r = find(e, spinner.pid);
    REQUIRE(r);
    REQUIRE(r->main_thread());
    CHECK(r->main_thread()->state_second == 'R');
    // On a loaded 2-core box the spinner may get well under a core: it still used CPU, the others none.
    CHECK(r->main_thread()->cpu_seconds > 0.02);
    CHECK((r->main_thread()->activity == ThreadActivity::spinning ||
           r->main_thread()->activity == ThreadActivity::runnable));

    const ProcessEvidence* gone = find(e, 999999999);
    REQUIRE(gone);
    CHECK(gone->gone);

    const Json j = to_json(e);
    CHECK(j["processes"].size() == 4);
}

TEST_CASE("the sweep stops at its thread limit and says so") {
    Child a{fork_futex_waiter()}, b{fork_futex_waiter()};
    ProcLimits limits;
    limits.gap_seconds = 0.05;
    limits.max_threads = 1;
    const ProcEvidence e = sample_job_threads("/proc", {a.pid, b.pid}, limits);
    CHECK(e.truncated);
    CHECK(e.threads == 1);
    REQUIRE(e.warnings.size() == 1);
}

TEST_CASE("task stat: comm with spaces and parentheses, state, utime and stime") {
    const auto s = parse_task_stat(
        "483081 (pt_main (x) y) R 483001 483001 483001 0 -1 4194560 9000 0 0 0 91234 3310 0 0 20 0 60 0 1 "
        "2\n");
    REQUIRE(s.has_value());
    CHECK(s->comm == "pt_main (x) y");
    CHECK(s->state == 'R');
    CHECK(s->utime_ticks == 91234);
    CHECK(s->stime_ticks == 3310);
    CHECK_FALSE(parse_task_stat("").has_value());
    CHECK_FALSE(parse_task_stat("12 (x) R 1 2 3").has_value());                        // cut short
    CHECK_FALSE(parse_task_stat("12 (x) RR 1 2 3 4 5 6 7 8 9 10 11 12").has_value());  // not a state
    CHECK_FALSE(parse_task_stat("12 (x) R 1 1 1 0 -1 0 0 0 0 0 -5 7 0").has_value());  // negative utime
}

TEST_CASE("rank from the environment: RANK, else SLURM_PROCID; garbage ignored") {
    using namespace std::string_literals;
    CHECK(rank_from_environ("SLURM_PROCID=7\0RANK=3\0LOCAL_RANK=1\0"s).rank == 3);
    const RankIdentity slurm = rank_from_environ("SLURM_PROCID=7\0SLURM_LOCALID=2\0"s);
    CHECK(slurm.rank == 7);
    CHECK(slurm.source == "SLURM_PROCID");
    CHECK(slurm.local_rank == 2);
    CHECK(rank_from_environ("RANK=x\0RANK\0=\0"s).rank == -1);
    CHECK(rank_from_environ("").rank == -1);
}

TEST_CASE("cgroup.procs: pids, garbage lines skipped, bounded") {
    CHECK(parse_cgroup_procs("12\n13\nabc\n\n0\n14", 10) == std::vector<pid_t>{12, 13, 14});
    CHECK(parse_cgroup_procs("1\n2\n3\n", 2).size() == 2);
}

TEST_CASE("classify: spinning wins over the instant's state; D, futex, sleep") {
    CHECK(classify_thread('S', "futex_wait_queue", 0.9) == ThreadActivity::spinning);
    CHECK(classify_thread('R', "", 0.1) == ThreadActivity::runnable);
    CHECK(classify_thread('D', "rpc_wait_bit_killable", 0) == ThreadActivity::io_wait);
    CHECK(classify_thread('S', "futex_wait_queue", 0) == ThreadActivity::futex_wait);
    CHECK(classify_thread('S', "do_epoll_wait", 0) == ThreadActivity::sleeping);
    CHECK(classify_thread('Z', "", 0) == ThreadActivity::exited);
    CHECK(classify_thread('?', "", 0) == ThreadActivity::unknown);
}

TEST_CASE("pids of a Slurm job's cgroup tree: the job dir, its steps and tasks") {
    char tmpl[] = "/tmp/stallscope-cgroup-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string job = std::string(tmpl) + "/job_42";
    const std::string task = job + "/step_0/user/task_0";
    REQUIRE(std::system(("mkdir -p " + task + " " + job + "/step_extern").c_str()) == 0);
    { std::ofstream(job + "/cgroup.procs"); }
    std::ofstream(task + "/cgroup.procs") << "101\n102\n";
    std::ofstream(job + "/step_extern/cgroup.procs") << "99\n";
    CHECK(pids_in_cgroup_tree(job) == std::vector<pid_t>{101, 102, 99});
    CHECK(pids_in_cgroup_tree(job, 2).size() == 2);
    CHECK(pids_in_cgroup_tree(std::string(tmpl) + "/nothing").empty());
    std::system((std::string("rm -rf ") + tmpl).c_str());
}

TEST_CASE(
    "pids of a Slurm job without a cgroup: our uid's processes whose environment names the job and host") {
    char tmpl[] = "/tmp/stallscope-proc-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string root = tmpl;
    auto process = [&](const std::string& pid, const std::string& environment) {
        REQUIRE(std::system(("mkdir -p " + root + "/" + pid).c_str()) == 0);
        std::ofstream(root + "/" + pid + "/environ", std::ios::binary) << environment;
    };
    using namespace std::string_literals;
    process("301", "HOME=/u\0SLURM_JOB_ID=77\0SLURM_PROCID=0\0SLURMD_NODENAME=n1\0"s);
    process("7", "SLURMD_NODENAME=n1\0SLURM_JOB_ID=77"s);      // last entry, no trailing NUL
    process("305", "SLURM_JOB_ID=77\0SLURMD_NODENAME=n2\0"s);  // the job's rank of another slurmd
    process("302", "SLURM_JOB_ID=770\0X=SLURM_JOB_ID=77\0"s);  // another job; the text only inside a value
    process("303", "SLURM_JOB_ID=77\0"s);                      // the helper itself: skipped
    process("self", "SLURM_JOB_ID=77\0"s);                     // not a pid
    process("304", ""s);
    const uid_t me = ::getuid();
    CHECK(pids_of_job_by_environ(root, me, "77", "n1", 303) == std::vector<pid_t>{7, 301});
    CHECK(pids_of_job_by_environ(root, me, "77", "n1.cluster.example", 303) == std::vector<pid_t>{7, 301});
    // No rank names this host (NodeName is not the host name, or no host): every rank of the job.
    CHECK(pids_of_job_by_environ(root, me, "77", "gpu-a17", 303) == std::vector<pid_t>{7, 301, 305});
    CHECK(pids_of_job_by_environ(root, me, "77", "", 303) == std::vector<pid_t>{7, 301, 305});
    CHECK(pids_of_job_by_environ(root, me, "77", "n1", 303, 1).size() == 1);
    CHECK(pids_of_job_by_environ(root, me + 1, "77", "n1", 303).empty());  // another user's processes
    CHECK(pids_of_job_by_environ(root, me, "", "n1", 303).empty());
    CHECK(pids_of_job_by_environ(root + "/missing", me, "77", "n1", 303).empty());
    std::system(("rm -rf " + root).c_str());

    // The real /proc: a child exec'd with a job id of its own is found, this test process is not.
    const std::string job = "stallscope-test-" + std::to_string(::getpid());
    Child child;
    child.pid = ::fork();
    REQUIRE(child.pid >= 0);
    if (child.pid == 0) {
        const std::string var = "SLURM_JOB_ID=" + job;
        char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
        char* const envp[] = {const_cast<char*>(var.c_str()), nullptr};
        ::execve("/bin/sleep", argv, envp);
        ::_exit(127);
    }
    std::vector<pid_t> found;
    for (int i = 0; i < 200 && found.empty(); ++i) {  // until the exec has happened
        found = pids_of_job_by_environ("/proc", me, job, "", ::getpid());
        if (found.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(found == std::vector<pid_t>{child.pid});
}
