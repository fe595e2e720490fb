// The issue-15 rules one by one (tests/scenarios_gpu covers them through whole timelines): PCIe replays,
// the job's own pressure and memory limit, which GPUs are the step's, the GPM hint and spin decision.
#include <doctest/doctest.h>

#include "libstallscope/rules/cgroup_rules.h"
#include "libstallscope/rules/gpm_rules.h"
#include "libstallscope/rules/host_rules.h"
#include "tests/rules/builders.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

Gpu with_gpm(Gpu g, double sm, double tensor, double dram, double nvlink = 0, double pcie = 0) {
    GpmMetrics m;
    m.sm_active_pct = sm;
    m.tensor_active_pct = tensor;
    m.dram_bandwidth_pct = dram;
    m.nvlink_tx_mib_per_s = nvlink / 2;
    m.nvlink_rx_mib_per_s = nvlink / 2;
    m.pcie_tx_mib_per_s = pcie / 2;
    m.pcie_rx_mib_per_s = pcie / 2;
    g.gpm = m;
    return g;
}

Gpu with_pcie_replays(Gpu g, std::uint64_t replays) {
    GpuInterconnect l;
    l.pcie_replay_count = replays;
    l.nvlink_crc_errors = 0;
    g.interconnect = l;
    return g;
}

Gpu with_link(Gpu g, std::uint64_t generation, std::uint64_t width, std::uint64_t max_generation = 5,
              std::uint64_t max_width = 16) {
    PcieLink l;
    l.generation = generation;
    l.width = width;
    l.max_generation = max_generation;
    l.max_width = max_width;
    g.pcie_link = l;
    return g;
}

std::vector<Finding> link_findings(const Snapshot& s) {
    std::vector<Finding> link;
    for (const auto& f : run_one(gpu_depth_rules, s))
        if (f.reason.code == "gpu_pcie_link_degraded") link.push_back(f);
    return link;
}

JobCgroup job() {
    JobCgroup c;
    c.path = "/system.slice/slurmstepd.scope/job_7";
    c.job_id = "7";
    return c;
}

bool fired(const Findings& out, const std::string& code) {
    for (const auto& f : out)
        if (f.reason.code == code) return true;
    return false;
}

}  // namespace

TEST_CASE("PCIe replays between two samples on a step GPU are a SLOW fabric reason naming the GPU") {
    Snapshot a = at(100), b = at(110);
    a.gpus = {with_pcie_replays(gpu(0, 95), 2), with_pcie_replays(gpu(1, 95), 5)};
    b.gpus = {with_pcie_replays(gpu(0, 95), 2), with_pcie_replays(gpu(1, 95), 9)};
    const auto out = run_pair(gpu_link_error_rule, a, b);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "gpu_pcie_replay");
    CHECK(out[0].reason.category == "fabric");
    CHECK(out[0].reason.label == kLabelSlow);
    CHECK(out[0].reason.subject == "GPU-1");
    CHECK(num(out[0], "pcie_replay_delta") == 4);
    CHECK(run_pair(gpu_link_error_rule, a, a).empty());  // lifetime counts alone are not judged
}

TEST_CASE("a busy GPU on 8 of its 16 PCIe lanes is a SLOW fabric reason; an idle GPU's Gen1 link is not") {
    Snapshot s = at(100);
    s.gpus = {with_link(gpu(0, 95), 5, 8), with_link(gpu(1, 2), 1, 16), with_link(gpu(2, 95), 5, 16)};
    const auto link = link_findings(s);
    REQUIRE(link.size() == 1);
    CHECK(link[0].reason.subject == "GPU-0");
    CHECK(link[0].reason.category == "fabric");
    CHECK(link[0].reason.label == kLabelSlow);
    CHECK(num(link[0], "pcie_link_width") == 8);
    CHECK(num(link[0], "pcie_link_max_width") == 16);
    CHECK(link[0].reason.message.find("Gen5 x8 of Gen5 x16") != std::string::npos);
    s.context.visible_devices = {"GPU-2"};  // the degraded GPU is another step's: not this step's reason
    CHECK(link_findings(s).empty());
}

TEST_CASE(
    "a busy GPU whose PCIe link trained a generation low fires; what NVML did not measure claims nothing") {
    Snapshot s = at(100);
    s.gpus = {with_link(gpu(0, 95), 3, 16)};
    auto link = link_findings(s);
    REQUIRE(link.size() == 1);
    CHECK(num(link[0], "pcie_link_generation") == 3);
    s.gpus = {gpu(0, 95)};  // no link data at all (nvidia-smi, amdgpu, a MIG instance)
    CHECK(link_findings(s).empty());
    Gpu unknown_load = with_link(gpu(0, 95), 3, 16);
    unknown_load.utilization_pct.reset();  // a low generation is judged only on a GPU known to be busy
    s.gpus = {unknown_load};
    CHECK(link_findings(s).empty());
    Gpu no_width = with_link(gpu(0, 95), 5, 8);
    no_width.pcie_link->max_width.reset();  // lanes without the most they could be: not judged
    s.gpus = {no_width};
    CHECK(link_findings(s).empty());
}

TEST_CASE("the job's own PSI fires job_*_pressure and silences the node-wide host pressure rule") {
    Snapshot s = at(100);
    s.host_stats.psi.cpu_some_avg10 = 95;  // another job hammers the node's CPUs
    JobCgroup c = job();
    c.psi.cpu_some_avg10 = 5;
    c.psi.io_full_avg10 = 35;
    s.job_cgroup = c;
    const auto job_out = run_one(job_cgroup_rules, s);
    CHECK(fired(job_out, "job_io_pressure"));
    CHECK_FALSE(fired(job_out, "job_cpu_pressure"));
    CHECK(run_one(host_pressure_rule, s).empty());
    s.job_cgroup.reset();  // no job numbers: the node's stay as the evidence
    CHECK(fired(run_one(host_pressure_rule, s), "host_cpu_pressure"));
}

TEST_CASE("a job at 96 % of its memory limit is warned about; no limit, no warning") {
    Snapshot s = at(100);
    JobCgroup c = job();
    c.memory_current_bytes = 96ULL << 30;
    c.memory_max_bytes = 100ULL << 30;
    s.job_cgroup = c;
    const auto out = run_one(job_cgroup_rules, s);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.code == "job_memory_near_limit");
    CHECK(out[0].reason.label == kLabelFast);
    s.job_cgroup->memory_max_bytes.reset();
    CHECK(run_one(job_cgroup_rules, s).empty());
}

TEST_CASE("CPU throttling in few periods, or over too few periods, is not a reason") {
    Snapshot a = at(100), b = at(110);
    JobCgroup c = job();
    c.cpu_nr_periods = 1000;
    c.cpu_nr_throttled = 0;
    a.job_cgroup = c;
    c.cpu_nr_periods = 1100;
    c.cpu_nr_throttled = 10;  // 10 %
    b.job_cgroup = c;
    CHECK(run_pair(job_cgroup_rules, a, b).empty());
    c.cpu_nr_periods = 1005;
    c.cpu_nr_throttled = 5;  // 100 % of 5 periods
    b.job_cgroup = c;
    CHECK(run_pair(job_cgroup_rules, a, b).empty());
    c.cpu_nr_periods = 1100;
    c.cpu_nr_throttled = 30;
    b.job_cgroup = c;
    CHECK(fired(run_pair(job_cgroup_rules, a, b), "job_cpu_throttled"));
}

TEST_CASE("step GPUs: by uuid, MIG uuid or index from the scheduler; all when it names none or none match") {
    Snapshot s = at(100);
    s.gpus = {gpu(0, 90), gpu(1, 90), gpu(2, 90)};
    const auto is_step_gpu = [&](const Gpu& g, const Snapshot& of) {
        return StepGpus(of)[static_cast<std::size_t>(&g - of.gpus.data())];
    };
    CHECK(is_step_gpu(s.gpus[1], s));
    s.context.visible_devices = {"GPU-2"};
    CHECK(is_step_gpu(s.gpus[2], s));
    CHECK_FALSE(is_step_gpu(s.gpus[0], s));
    s.context.visible_devices = {"1"};
    CHECK(is_step_gpu(s.gpus[1], s));
    CHECK_FALSE(is_step_gpu(s.gpus[2], s));
    s.context.visible_devices = {"MIG-unknown"};  // nothing matches: renumbered, so everything is ours
    CHECK(is_step_gpu(s.gpus[0], s));
}

TEST_CASE("StepGpus answers as a GPU-by-GPU reading of the scheduler's names, past the 64th GPU too") {
    // Contexts drawn from the forms the scheduler uses (uuid, index, MIG parent uuid with and without
    // "MIG-", gres indices, names that match nothing) over nodes of 1 to 80 GPUs, some of them MIG,
    // against the rule read literally for each GPU on its own.
    const auto named = [](const Gpu& g, const Snapshot& s) {
        for (const std::string& e : s.context.visible_devices)
            if (e == g.uuid || (g.mig ? e == g.mig->parent_uuid || e == "MIG-" + g.mig->parent_uuid
                                      : e == std::to_string(g.index)))
                return true;
        for (const std::string& e : s.context.gpus)
            if (e == std::to_string(g.index)) return true;
        return false;
    };
    const auto is_step_gpu = [&](const Gpu& g, const Snapshot& s) {
        if (s.context.visible_devices.empty() && s.context.gpus.empty()) return true;
        bool any = false;
        for (const Gpu& other : s.gpus) any = any || named(other, s);
        return !any || named(g, s);
    };
    std::uint32_t seed = 99;
    const auto next = [&](std::uint32_t below) {
        return (seed = seed * 1103515245u + 12345u) / 65536u % below;
    };
    for (int round = 0; round < 300; ++round) {
        CAPTURE(round);
        Snapshot s = at(100);
        const int n = 1 + static_cast<int>(next(round % 10 == 0 ? 80 : 9));
        for (int i = 0; i < n; ++i) {
            s.gpus.push_back(gpu(i, 90));
            if (next(5) == 0) s.gpus.back().mig = MigInstance{"GPU-parent" + std::to_string(next(4)), ""};
        }
        const auto pick = [&]() -> std::string {
            const std::uint32_t i = next(static_cast<std::uint32_t>(n + 10));
            switch (next(5)) {
                case 0:
                    return "GPU-" + std::to_string(i);
                case 1:
                    return std::to_string(i);
                case 2:
                    return "MIG-GPU-parent" + std::to_string(next(5));
                case 3:
                    return "GPU-parent" + std::to_string(next(5));
                default:
                    return "nothing" + std::to_string(i);
            }
        };
        for (std::uint32_t k = next(4); k > 0; --k) s.context.visible_devices.push_back(pick());
        for (std::uint32_t k = next(3); k > 0; --k) s.context.gpus.push_back(std::to_string(next(90)));
        const StepGpus step(s);
        for (std::size_t i = 0; i < s.gpus.size(); ++i) {
            CAPTURE(i);
            CHECK(step[i] == is_step_gpu(s.gpus[i], s));
        }
    }
    Snapshot big = at(100);  // only a GPU past the 64th is the step's
    for (int i = 0; i < 70; ++i) big.gpus.push_back(gpu(i, 90));
    big.context.visible_devices = {"68"};
    const StepGpus step(big);
    CHECK(step[68]);
    CHECK_FALSE(step[3]);
    CHECK_FALSE(step[69]);
}

TEST_CASE("a foreign process on a GPU that is not the step's is none of its business") {
    Snapshot s = at(100);
    s.gpus = {gpu(0, 90), gpu(1, 90)};
    GpuProcess p;
    p.pid = 4000;
    p.owner = "other_user";
    p.uid = 1002;
    s.gpus[0].processes = std::vector<GpuProcess>{p};
    s.context.visible_devices = {"GPU-1"};
    ForeignProcessRule rule;
    const auto evaluate = [&](const RuleInput& in, Findings& out) { rule.evaluate(in, out); };
    CHECK(run_one(evaluate, s).empty());
    s.context.visible_devices = {"GPU-0"};
    const auto out = run_one(evaluate, s);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.message.find("uid 1002") != std::string::npos);
}

TEST_CASE("GPM hint and spin decision: compute, memory, communication, input; none without GPM") {
    Snapshot s = at(100);
    s.gpus = {gpu(0, 95)};
    CHECK_FALSE(gpm_bottleneck_hint(s).has_value());
    s.gpus = {with_gpm(gpu(0, 95), 80, 60, 30)};
    CHECK(gpm_bottleneck_hint(s) == "compute");
    s.gpus = {with_gpm(gpu(0, 95), 80, 5, 85)};
    CHECK(gpm_bottleneck_hint(s) == "memory");
    s.gpus = {with_gpm(gpu(0, 95), 30, 10, 10, 60000)};
    CHECK(gpm_bottleneck_hint(s) == "network");
    s.gpus = {with_gpm(gpu(0, 95), 30, 10, 10, 0, 100)};
    CHECK_FALSE(gpm_bottleneck_hint(s).has_value());
    JobCgroup c = job();
    c.psi.cpu_some_avg10 = 40;
    s.job_cgroup = c;
    CHECK(gpm_bottleneck_hint(s) == "input");

    const Thresholds t;
    CHECK(gpm_spinning(with_gpm(gpu(0, 100, 600), 2, 0, 0.5), t) == true);  // high power does not matter
    CHECK(gpm_spinning(with_gpm(gpu(0, 100, 200), 70, 40, 30), t) == false);
    CHECK_FALSE(gpm_spinning(gpu(0, 100, 200), t).has_value());  // no GPM: caller uses power
    Gpu mig = with_gpm(gpu(0, 0), 0, 0, 0);
    mig.utilization_pct.reset();
    CHECK(gpm_spinning(mig, t) == false);  // 0 % SM activity on a slice is idle, not spinning
}
