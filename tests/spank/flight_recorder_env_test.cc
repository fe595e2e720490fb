// The plugin's PyTorch flight-recorder decision (issue 41, doc/hang-evidence.md §1): what it adds to a
// recording step's environment, never over the job's choice, and the FIFO directory check that keeps
// PyTorch's TORCH_CHECKed mkfifo from aborting a rank.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "spank/config.h"
#include "spank/flight_recorder_env.h"

using namespace stallscope::spank;

namespace {
using Env = std::vector<std::string>;
const char* kDump = "/home/alice/run/stallscope-42/torch-fr-";
const char* kPipe = "/run/stallscope/42/frpipe.0.";

std::string fr_value_of(const FlightRecorderPlan& plan, const std::string& name) {
    for (const auto& [n, v] : plan.set)
        if (n == name) return v;
    return "<unset>";
}

FlightRecorderPlan plan(const Env& env, const char* pipe = kPipe, const char* problem = "") {
    return plan_flight_recorder_env(true, env, kDump, pipe, problem);
}
}  // namespace

TEST_CASE(
    "a job without any flight-recorder variable gets the buffer, dump on timeout, dump and pipe files") {
    const auto p = plan({"PATH=/usr/bin"});
    CHECK(fr_value_of(p, "TORCH_NCCL_TRACE_BUFFER_SIZE") == "2000");
    CHECK(fr_value_of(p, "TORCH_FR_BUFFER_SIZE") == "2000");
    CHECK(fr_value_of(p, "TORCH_NCCL_DUMP_ON_TIMEOUT") == "1");
    CHECK(fr_value_of(p, "TORCH_FR_DUMP_TEMP_FILE") == kDump);
    CHECK(fr_value_of(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE") == kDump);
    CHECK(fr_value_of(p, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") == kPipe);
    CHECK(p.set.size() == 6);
    CHECK(p.note.empty());
}

TEST_CASE("a buffer size the job set, 0 and empty included, means nothing at all is set") {
    for (const Env& env : {Env{"TORCH_NCCL_TRACE_BUFFER_SIZE=0"}, Env{"TORCH_FR_BUFFER_SIZE=0"},
                           Env{"TORCH_NCCL_TRACE_BUFFER_SIZE="}, Env{"TORCH_FR_BUFFER_SIZE=500"}}) {
        const auto p = plan(env);
        CHECK_MESSAGE(p.set.empty(), env.front());
        CHECK(p.note.find("left as the job set it") != std::string::npos);
    }
}

TEST_CASE("each other variable the job set is kept; its dump or pipe choice keeps both names") {
    const auto p = plan({"TORCH_NCCL_DUMP_ON_TIMEOUT=0", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/u/fr_",
                         "TORCH_FR_DEBUG_INFO_PIPE_FILE=/u/pipe_"});
    CHECK(fr_value_of(p, "TORCH_NCCL_DUMP_ON_TIMEOUT") == "<unset>");
    CHECK(fr_value_of(p, "TORCH_FR_DUMP_TEMP_FILE") == "<unset>");
    CHECK(fr_value_of(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE") == "<unset>");
    CHECK(fr_value_of(p, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") == "<unset>");
    CHECK(fr_value_of(p, "TORCH_NCCL_TRACE_BUFFER_SIZE") == "2000");
}

TEST_CASE(
    "no checked FIFO directory: no pipe variable (PyTorch would abort the rank), and the log says why") {
    const auto p = plan({}, "", "/run/stallscope/42: no free inodes");
    CHECK(fr_value_of(p, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") == "<unset>");
    CHECK(fr_value_of(p, "TORCH_NCCL_TRACE_BUFFER_SIZE") == "2000");  // the dump on timeout still works
    CHECK(p.note.find("no free inodes") != std::string::npos);
}

TEST_CASE("flight_recorder=0 in plugstack.conf: nothing; the key is 0|1 and on by default") {
    CHECK(plan_flight_recorder_env(false, {}, kDump, kPipe, "").set.empty());
    CHECK(parse_plugin_args({}).config.flight_recorder);
    const auto off = parse_plugin_args({"flight_recorder=0"});
    CHECK(off.errors.empty());
    CHECK_FALSE(off.config.flight_recorder);
    CHECK_FALSE(parse_plugin_args({"flight_recorder=off"}).errors.empty());
}

TEST_CASE("the FIFO directory check: the job user's own 0700 dir with inodes, node-local") {
    struct stat st {};
    st.st_mode = S_IFDIR | 0700;
    st.st_uid = 1000;
    struct statvfs vfs {};
    vfs.f_favail = 1000;
    vfs.f_bavail = 1000;
    const long tmpfs = 0x01021994;
    CHECK(pipe_dir_problem(st, vfs, tmpfs, 1000) == "");
    CHECK(pipe_dir_problem(st, vfs, tmpfs, 1001).find("owned by uid 1000") != std::string::npos);
    CHECK(pipe_dir_problem(st, vfs, 0x6969, 1000) == "not on a node-local filesystem");      // NFS
    CHECK(pipe_dir_problem(st, vfs, 0x0BD00BD0, 1000) == "not on a node-local filesystem");  // Lustre
    auto with = [&](auto change) {
        struct stat s = st;
        struct statvfs v = vfs;
        change(s, v);
        return pipe_dir_problem(s, v, tmpfs, 1000);
    };
    CHECK(with([](struct stat& s, struct statvfs&) { s.st_mode = S_IFDIR | 0755; }) == "mode is not 0700");
    CHECK(with([](struct stat& s, struct statvfs&) { s.st_mode = S_IFREG | 0700; }) == "not a directory");
    CHECK(with([](struct stat&, struct statvfs& v) { v.f_favail = 0; }) == "no free inodes");
    CHECK(with([](struct stat&, struct statvfs& v) { v.f_bavail = 0; }) == "no free space");
}

TEST_CASE(
    "prepare_pipe_dir on this machine: made 0700, taken again by a later step; a missing parent or a "
    "link is refused") {
    char tmpl[] = "/tmp/stallscope-frpipe-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string root = tmpl;
    const std::string dir = root + "/42";
    CHECK(prepare_pipe_dir(dir, ::getuid(), ::getgid()) == "");
    struct stat st {};
    REQUIRE(::lstat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(prepare_pipe_dir(dir, ::getuid(), ::getgid()) == "");  // the next step of the job
    CHECK(prepare_pipe_dir(root + "/missing/42", ::getuid(), ::getgid()).find("cannot create") == 0);
    REQUIRE(::symlink(dir.c_str(), (root + "/43").c_str()) == 0);
    CHECK(prepare_pipe_dir(root + "/43", ::getuid(), ::getgid()).find("cannot open") == 0);
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);  // someone loosened it: not trusted any more
    CHECK(prepare_pipe_dir(dir, ::getuid(), ::getgid()).find("mode is not 0700") != std::string::npos);
    std::system(("rm -rf '" + root + "'").c_str());
}
