// The job's own cgroup (v2 and v1) and the placement of GPU processes, through the real source.
#include <doctest/doctest.h>

#include <filesystem>

#include "libstallscope/model/rates.h"
#include "libstallscope/sources/cgroup/cgroup_parsers.h"
#include "libstallscope/sources/factories.h"
#include "tests/sources/gpu/gpu_test_util.h"

using namespace stallscope;
using gpu_test::any_contains;
using gpu_test::count_containing;
using gpu_test::fixture;
using gpu_test::TempDir;
using gpu_test::write_file;

namespace {

const char* kJobDir = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_4242";

Roots node_roots(const std::string& root) {
    Roots roots;
    roots.procfs = root + "/proc";
    roots.sysfs = root + "/sys";
    return roots;
}

Snapshot sample(Source& source, double time = 0, const char* scheduler = "slurm") {
    Snapshot s;
    s.time = time;
    s.context.scheduler = scheduler;
    source.sample(s);
    return s;
}

// A writable copy of a fixture node, so a test can change files between samples.
std::string copy_of(const TempDir& dir, const std::string& node) {
    std::filesystem::copy(fixture(node), dir.path(), std::filesystem::copy_options::recursive);
    return dir.path();
}

GpuProcess process(std::int64_t pid) {
    GpuProcess p;
    p.pid = pid;
    p.used_memory_bytes = 1ULL << 30;
    return p;
}

}  // namespace

TEST_CASE("a Slurm step's cgroup v2 is found from /proc/self/cgroup and read with exact values") {
    auto source = make_cgroup_source(node_roots(fixture("nodes/h100-slurm-step")));
    CHECK(source->name() == "cgroup");
    const Snapshot s = sample(*source);
    CHECK(s.warnings.empty());
    REQUIRE(s.job_cgroup.has_value());
    const JobCgroup& c = *s.job_cgroup;
    CHECK(c.version == 2);
    CHECK(c.path == "/system.slice/slurmstepd.scope/job_4242");
    CHECK(c.scope == "job");
    CHECK(c.job_id == "4242");
    CHECK(c.step_id == "0");
    CHECK(c.memory_current_bytes == 412316860416ULL);
    CHECK(c.memory_peak_bytes == 498216206336ULL);
    CHECK(c.memory_max_bytes == 536870912000ULL);
    CHECK(c.memory_oom_events == 0u);
    CHECK(c.memory_oom_kill_events == 0u);
    CHECK(c.cpu_usage_usec == 91824350123ULL);
    CHECK(c.cpu_user_usec == 85211003311ULL);
    CHECK(c.cpu_system_usec == 6613346812ULL);
    CHECK(c.cpu_nr_periods == 361204u);
    CHECK(c.cpu_nr_throttled == 1210u);
    CHECK(c.cpu_throttled_usec == 2203940u);
    CHECK(c.psi.cpu_some_avg10 == doctest::Approx(1.2));
    CHECK(c.psi.cpu_some_total_us == 88234511u);
    CHECK(c.psi.io_full_total_us == 1023345u);
    CHECK(c.psi.memory_full_avg10 == doctest::Approx(0));
}

TEST_CASE("an OOM kill and CPU throttling inside the job show as deltas of the job's own counters") {
    TempDir dir;
    const std::string root = copy_of(dir, "nodes/h100-slurm-step");
    auto source = make_cgroup_source(node_roots(root));
    const Snapshot first = sample(*source, 100);
    write_file(root + kJobDir + "/memory.events",
               "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n");
    write_file(root + kJobDir + "/cpu.stat",
               "usage_usec 91834350123\nuser_usec 85219003311\nsystem_usec 6615346812\nnr_periods 361304\n"
               "nr_throttled 1290\nthrottled_usec 6203940\n");
    const Snapshot second = sample(*source, 110);
    CHECK(second.warnings.empty());
    const Rates rates = compute_rates(first, second);
    const CounterDelta* oom = rates.find(rates.host, "job_cgroup", "memory_oom_kill_events");
    REQUIRE(oom != nullptr);
    CHECK(oom->delta == 1u);
    const CounterDelta* throttled = rates.find(rates.host, "job_cgroup", "cpu_throttled_usec");
    REQUIRE(throttled != nullptr);
    CHECK(throttled->delta == 4000000u);
    CHECK(throttled->per_second == doctest::Approx(400000));
    const CounterDelta* usage = rates.find(rates.host, "job_cgroup", "cpu_usage_usec");
    REQUIRE(usage != nullptr);
    CHECK(usage->per_second == doctest::Approx(1e6));  // one core busy
}

TEST_CASE("cgroup v1 (hybrid host): memory, OOM kills and cpuacct from the controllers' hierarchies") {
    auto source = make_cgroup_source(node_roots(fixture("cgroup/slurm-v1-step")));
    const Snapshot s = sample(*source);
    CHECK(s.warnings.empty());
    REQUIRE(s.job_cgroup.has_value());
    const JobCgroup& c = *s.job_cgroup;
    CHECK(c.version == 1);
    CHECK(c.path == "/slurm/uid_1000/job_77");
    CHECK(c.job_id == "77");
    CHECK(c.memory_current_bytes == 21474836480ULL);
    CHECK(c.memory_peak_bytes == 30064771072ULL);
    CHECK_FALSE(c.memory_max_bytes.has_value());  // v1's "unlimited" is a huge number
    CHECK(c.memory_oom_kill_events == 3u);  // the job's own 2 + step_0/task_0's 1 (v1 counts per cgroup)
    CHECK_FALSE(c.memory_oom_events.has_value());
    CHECK(c.cpu_usage_usec == 734000000u);     // cpuacct.usage is ns
    CHECK(c.cpu_throttled_usec == 12500000u);  // throttled_time is ns
    CHECK(c.cpu_nr_throttled == 250u);
    CHECK_FALSE(c.psi.cpu_some_avg10.has_value());  // no per-cgroup PSI in v1
}

TEST_CASE("cgroup v1: an OOM kill counted in a task's cgroup is the job's, and stays after its step ends") {
    TempDir dir;
    const std::string root = copy_of(dir, "cgroup/slurm-v1-step");
    const std::string job = root + "/sys/fs/cgroup/memory/slurm/uid_1000/job_77";
    auto source = make_cgroup_source(node_roots(root));
    const Snapshot first = sample(*source, 100);
    REQUIRE(first.job_cgroup.has_value());
    CHECK(first.job_cgroup->memory_oom_kill_events == 3u);
    // Step 0 ends (Slurm removes its cgroups); step 1's task is killed: the kernel counts it in task_0 only.
    std::filesystem::remove_all(job + "/step_0");
    std::filesystem::create_directories(job + "/step_1/task_0");
    write_file(job + "/step_1/memory.oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 0\n");
    write_file(job + "/step_1/task_0/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
    const Snapshot second = sample(*source, 110);
    CHECK(second.warnings.empty());
    REQUIRE(second.job_cgroup.has_value());
    CHECK(second.job_cgroup->memory_oom_kill_events == 4u);
    const Rates rates = compute_rates(first, second);
    const CounterDelta* oom = rates.find(rates.host, "job_cgroup", "memory_oom_kill_events");
    REQUIRE(oom != nullptr);
    CHECK(oom->delta == 1u);
    // Garbage in a task's file is named and that task's count left out; the rest still adds up.
    write_file(job + "/step_1/task_0/memory.oom_control", "oom_kill lots\n");
    const Snapshot third = sample(*source, 120);
    CHECK(any_contains(third.warnings, "step_1/task_0/memory.oom_control"));
    CHECK(third.job_cgroup->memory_oom_kill_events == 4u);
}

TEST_CASE("a Slurm process outside a job cgroup: null with one warning per run; not Slurm: no warning") {
    TempDir dir;
    const std::string root = copy_of(dir, "nodes/h100-slurm-step");
    write_file(root + "/proc/self/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n");
    auto source = make_cgroup_source(node_roots(root));
    const Snapshot first = sample(*source);
    CHECK_FALSE(first.job_cgroup.has_value());
    CHECK(count_containing(first.warnings, "not inside a Slurm job") == 1);
    CHECK(any_contains(first.warnings, "session-3.scope"));
    const Snapshot second = sample(*source);
    CHECK(second.warnings.empty());
    auto workstation = make_cgroup_source(node_roots(root));
    const Snapshot plain = sample(*workstation, 0, "none");
    CHECK_FALSE(plain.job_cgroup.has_value());
    CHECK(plain.warnings.empty());
}

TEST_CASE("garbage and missing cgroup files are null and named in a warning, the rest still read") {
    TempDir dir;
    const std::string root = copy_of(dir, "nodes/h100-slurm-step");
    write_file(root + kJobDir + "/memory.current", "lots\n");
    write_file(root + kJobDir + "/cpu.stat", "usage_usec -5\nuser_usec 10\n");
    std::filesystem::remove(root + kJobDir + "/memory.peak");  // kernel < 5.19
    auto source = make_cgroup_source(node_roots(root));
    const Snapshot s = sample(*source);
    REQUIRE(s.job_cgroup.has_value());
    CHECK_FALSE(s.job_cgroup->memory_current_bytes.has_value());
    CHECK_FALSE(s.job_cgroup->memory_peak_bytes.has_value());
    CHECK_FALSE(s.job_cgroup->cpu_usage_usec.has_value());
    CHECK(s.job_cgroup->cpu_user_usec == 10u);
    CHECK(s.job_cgroup->memory_max_bytes == 536870912000ULL);
    CHECK(any_contains(s.warnings, "memory.current"));
    CHECK(any_contains(s.warnings, "memory.peak"));
    CHECK(any_contains(s.warnings, "usage_usec"));
}

TEST_CASE("GPU processes are placed in this step, another job, another user's session, or unknown") {
    auto source = make_cgroup_source(node_roots(fixture("nodes/h100-slurm-step")));
    Snapshot s;
    Gpu g;
    g.index = 0;
    g.processes = std::vector<GpuProcess>{process(31337), process(40001), process(5555), process(999999)};
    s.gpus.push_back(g);
    source->sample(s);
    const auto& p = *s.gpus[0].processes;
    CHECK(p[0].owner == "step");
    CHECK(p[0].job_id == "4242");
    CHECK(p[0].uid == 1000u);
    CHECK(p[1].owner == "other_job");
    CHECK(p[1].job_id == "4243");
    CHECK(p[1].cgroup == "/system.slice/slurmstepd.scope/job_4243/step_0/user/task_0");
    CHECK(p[2].owner == "other_user");
    CHECK(p[2].uid == 1002u);
    CHECK(p[2].job_id.empty());
    CHECK(p[3].owner == "unknown");
    CHECK(any_contains(s.warnings, "GPU process 999999"));
}

TEST_CASE("walking up a cgroup path finds Slurm's step and job directories, SLUID names included") {
    auto a = find_slurm_dirs("/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0");
    REQUIRE(a);
    CHECK(a->job_dir == "/system.slice/slurmstepd.scope/job_4242");
    CHECK(a->step_dir == "/system.slice/slurmstepd.scope/job_4242/step_batch");
    CHECK(a->job_id == "4242");
    CHECK(a->step_id == "batch");
    // Slurm 26.05 names the job directory by SLUID: it is the parent of step_*, whatever its name.
    auto b = find_slurm_dirs("/system.slice/node7_slurmstepd.scope/s0ABCDEF123/step_extern/slurm");
    REQUIRE(b);
    CHECK(b->job_id == "s0ABCDEF123");
    CHECK(b->step_id == "extern");
    auto c = find_slurm_dirs("/system.slice/slurmstepd.scope/job_9");
    REQUIRE(c);
    CHECK(c->step_dir.empty());
    CHECK(c->job_id == "9");
    CHECK_FALSE(find_slurm_dirs("/user.slice/user-1000.slice/session-3.scope"));
    CHECK_FALSE(find_slurm_dirs(""));
    CHECK_FALSE(find_slurm_dirs("/job_"));
}

TEST_CASE("parse_proc_cgroup picks the hierarchy that holds the Slurm job; garbage gives nothing") {
    CHECK(parse_proc_cgroup("0::/a/job_1/step_0\n").version == 2);
    const auto hybrid = parse_proc_cgroup("4:memory:/slurm/uid_1/job_5/step_0\n0::/system.slice/x\n");
    CHECK(hybrid.version == 1);
    CHECK(hybrid.path == "/slurm/uid_1/job_5/step_0");
    CHECK(parse_proc_cgroup("\x01\x02garbage").version == 0);
    CHECK(parse_proc_cgroup("").version == 0);
    std::vector<std::string> warnings;
    CHECK(keyed_value("oom 1\noom_kill x\n", "oom_kill", "memory.events", warnings) == std::nullopt);
    CHECK(warnings.size() == 1);
    CHECK(keyed_value("oom 1\noom_kill 4\n", "oom", "memory.events", warnings) == 1u);
    CHECK(single_value("max\n", "memory.max", warnings) == std::nullopt);
    CHECK(warnings.size() == 1);
    CHECK(status_uid("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n") == 1000u);
    CHECK_FALSE(status_uid("Uid:\tabc\n"));
}
