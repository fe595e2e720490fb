#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "spank/process.h"
#include "spank/state.h"

using namespace stallscope::spank;

namespace {
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/stallscope-spank-test.XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { remove_tree(path); }
};
}  // namespace

TEST_CASE("job state round-trips, including hostile characters in out_dir") {
    JobState s{1000, 1000, {1000, 27}, "/home/a b/%x\nuid=0/stallscope-9"};
    auto back = parse_state(serialize_state(s));
    REQUIRE(back);
    CHECK(back->uid == 1000);
    CHECK(back->groups == std::vector<gid_t>{1000, 27});
    CHECK(back->out_dir == s.out_dir);
    CHECK(serialize_state(s).find("\nuid=0") == std::string::npos);
}

TEST_CASE("malformed job state is rejected") {
    CHECK_FALSE(parse_state(""));
    CHECK_FALSE(parse_state("uid=1\ngid=1\n"));
    CHECK_FALSE(parse_state("uid=x\ngid=1\ngroups=\nout_dir=/a\n"));
    CHECK_FALSE(parse_state("uid=1\ngid=1\ngroups=\nout_dir=relative\n"));
    CHECK_FALSE(parse_state("uid=1\ngid=1\ngroups=\nout_dir=/a%zz\n"));
    CHECK_FALSE(parse_state("uid=1\ngid=1\ngroups=\nout_dir=/a\nextra=1\n"));
}

TEST_CASE("root files: written atomically, symlinks and writable files refused") {
    TempDir t;
    std::string path = t.path + "/9.state";
    CHECK(write_root_file(path, "hello") == "");
    std::string err;
    if (geteuid() == 0) {
        CHECK(read_root_file(path, &err) == std::optional<std::string>("hello"));
        chmod(path.c_str(), 0666);
        CHECK_FALSE(read_root_file(path, &err));
        CHECK(err.find("not a root-owned") != std::string::npos);
    }
    REQUIRE(symlink(path.c_str(), (t.path + "/link").c_str()) == 0);
    CHECK_FALSE(read_root_file(t.path + "/link", &err));
    CHECK_FALSE(err.empty());
    CHECK_FALSE(read_root_file(t.path + "/missing", &err));
    CHECK(err.empty());
}

TEST_CASE("remove_tree removes nested content without following symlinks") {
    TempDir outside;
    TempDir t;
    std::string keep = outside.path + "/keep";
    write_root_file(keep, "x");
    mkdir((t.path + "/d").c_str(), 0700);
    write_root_file(t.path + "/d/f", "x");
    symlink(outside.path.c_str(), (t.path + "/escape").c_str());
    CHECK(remove_tree(t.path) == "");
    CHECK(access(t.path.c_str(), F_OK) != 0);
    CHECK(access(keep.c_str(), F_OK) == 0);
}

TEST_CASE("run_command captures output and the exit code, without a shell or PATH") {
    CommandResult r =
        run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {"PATH=/bin"}, std::nullopt, 5);
    CHECK(r.started);
    CHECK(r.exit_code == 3);
    CHECK(r.output == "out\nerr\n");
    CommandResult missing = run_command({"/nonexistent/scontrol"}, {}, std::nullopt, 5);
    CHECK_FALSE(missing.started);
    CHECK(missing.error == "exec failed: No such file or directory");
    CHECK_FALSE(run_command({"scontrol"}, {}, std::nullopt, 5).started);
}

TEST_CASE("run_command kills a command that overruns its timeout, children included") {
    CommandResult r = run_command({"/bin/sh", "-c", "sleep 30 & sleep 30"}, {}, std::nullopt, 1);
    CHECK(r.timed_out);
    CHECK(r.exit_code == -1);
}

TEST_CASE("run_command with ignore_sigterm survives a SIGTERM to its process group") {
    CommandResult r = run_command({"/bin/sh", "-c", "kill -TERM 0; echo alive"}, {}, std::nullopt, 5, true);
    CHECK(r.exit_code == 0);
    CHECK(r.output == "alive\n");
}

TEST_CASE("helper spawn: fd 3 carries the result line, only stop signals blocked, stdin is /dev/null") {
    if (geteuid() != 0) {
        MESSAGE("skipped: the identity switch needs root");
        return;
    }
    Credentials self{0, 0, {0}};
    std::string error;
    // The child notes the mask it started with (slurmstepd's blocked set must be gone; only the stop
    // signals stay blocked until the helper has its handlers), waits for SIGTERM (a trap, which the shell
    // unblocks), then reports that mask and stdin.
    auto h = spawn_helper(
        {"/bin/sh", "-c",
         "m=$(grep SigBlk /proc/$$/status | tr -d '\\t');"
         " trap 'echo \"stallscope/1 FAST $m stdin=$(readlink /proc/self/fd/0)\" >&3; exit 0' TERM;"
         " while :; do sleep 0.05; done"},
        {"PATH=/bin:/usr/bin"}, self, &error);
    REQUIRE_MESSAGE(h, error);
    usleep(200000);
    std::string fds;  // the helper's open fds: 0-2 and the liveness pipe on 3, nothing leaked
    if (DIR* d = opendir(("/proc/" + std::to_string(h->pid) + "/fd").c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') fds += std::string(e->d_name) + " ";
        closedir(d);
    }
    CHECK(fds == "0 1 2 3 ");
    StopResult r = stop_helper(*h, 5);
    CHECK_FALSE(r.killed);
    CHECK_MESSAGE(r.output.find("stallscope/1 FAST SigBlk:0000000000004203") == 0,
                  r.output);  // HUP INT USR1 TERM
    CHECK(r.output.find("stdin=/dev/null") != std::string::npos);
    CHECK(h->read_fd == -1);
}

TEST_CASE("helper spawn: a helper ignoring SIGTERM is killed after stop_timeout") {
    if (geteuid() != 0) {
        MESSAGE("skipped: the identity switch needs root");
        return;
    }
    std::string error;
    auto h = spawn_helper({"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}, {}, {0, 0, {0}},
                          &error);
    REQUIRE(h);
    usleep(100000);
    StopResult r = stop_helper(*h, 1);
    CHECK(r.killed);
    CHECK(r.waited_ms >= 1000);
    CHECK(r.waited_ms < 3000);
}

TEST_CASE("helper spawn: a SIGSTOPped helper is woken up by the stop and finishes gracefully") {
    if (geteuid() != 0) {
        MESSAGE("skipped: the identity switch needs root");
        return;
    }
    std::string error;
    auto h = spawn_helper(
        {"/bin/sh", "-c",
         "trap 'echo \"stallscope/1 FAST woke\" >&3; exit 0' TERM; while :; do sleep 0.05; done"},
        {"PATH=/bin:/usr/bin"}, {0, 0, {0}}, &error);
    REQUIRE_MESSAGE(h, error);
    usleep(200000);
    REQUIRE(kill(h->pid, SIGSTOP) == 0);
    usleep(100000);
    StopResult r = stop_helper(*h, 5);
    CHECK_FALSE(r.killed);
    CHECK_FALSE(r.ended_early);
    CHECK(r.output == "stallscope/1 FAST woke\n");
    CHECK(r.waited_ms < 2000);  // not the 5 s stop_timeout
    CHECK(r.exit_status == "exit 0");
}

TEST_CASE("helper spawn: a helper that died mid-step is reported as ended early, with its signal") {
    if (geteuid() != 0) {
        MESSAGE("skipped: the identity switch needs root");
        return;
    }
    std::string error;
    auto h = spawn_helper({"/bin/sh", "-c", "while :; do sleep 0.05; done"}, {"PATH=/bin:/usr/bin"},
                          {0, 0, {0}}, &error);
    REQUIRE_MESSAGE(h, error);
    usleep(100000);
    REQUIRE(kill(h->pid, SIGKILL) == 0);
    usleep(100000);  // the pipe's write end closes with the process
    StopResult r = stop_helper(*h, 5);
    CHECK(r.ended_early);
    CHECK_FALSE(r.killed);
    CHECK(r.output.empty());
    CHECK(r.exit_status.rfind("signal 9 (", 0) == 0);
}

TEST_CASE("helper spawn: a missing binary is reported synchronously with the reason") {
    std::string error;
    auto h =
        spawn_helper({"/nonexistent/stallscope", "record"}, {}, {geteuid(), getegid(), {getegid()}}, &error);
    CHECK_FALSE(h);
    if (geteuid() == 0) CHECK(error == "exec failed: No such file or directory");
}

TEST_CASE("helper spawn: the child really becomes the job user") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    CommandResult r =
        run_command({"/bin/sh", "-c", "grep -E '^(Uid|Gid|Groups)' /proc/self/status | tr -s '\\t ' ' '"}, {},
                    Credentials{65534, 65534, {65534}}, 5);
    CHECK(r.output == "Uid: 65534 65534 65534 65534\nGid: 65534 65534 65534 65534\nGroups: 65534 \n");
}

TEST_CASE("job state keeps every step's output directory, not only the first (issue 17)") {
    JobState s{1000, 1000, {1000}, "/home/a/run/stallscope-9"};
    CHECK_FALSE(add_out_dir(s, "/home/a/run/stallscope-9"));  // the first step's again
    CHECK(add_out_dir(s, "/home/a/run/sub/stallscope-9"));    // srun --chdir sub
    CHECK_FALSE(add_out_dir(s, "/home/a/run/sub/stallscope-9"));
    CHECK_FALSE(add_out_dir(s, "relative"));
    auto back = parse_state(serialize_state(s));
    REQUIRE(back);
    CHECK(all_out_dirs(*back) ==
          std::vector<std::string>{"/home/a/run/stallscope-9", "/home/a/run/sub/stallscope-9"});
    for (int i = 0; i < 40; ++i) add_out_dir(s, "/d/" + std::to_string(i));
    CHECK(all_out_dirs(s).size() == kMaxOutDirs);
    REQUIRE(parse_state(serialize_state(s)));
    CHECK(all_out_dirs(*parse_state(serialize_state(s))).size() == kMaxOutDirs);
    // An old single-directory state file still parses.
    CHECK(all_out_dirs(*parse_state("uid=1\ngid=1\ngroups=\nout_dir=/a\n")) ==
          std::vector<std::string>{"/a"});
}
