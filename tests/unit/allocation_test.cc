#include "libstallscope/sources/allocation.h"

#include <doctest/doctest.h>

using namespace stallscope;

namespace {
Snapshot node_with_8_gpus() {
    Snapshot s;
    for (int i = 0; i < 8; ++i) {
        Gpu g;
        g.index = i;
        g.minor_number = i;
        g.uuid = "GPU-" + std::to_string(i);
        s.gpus.push_back(g);
    }
    return s;
}
}  // namespace

TEST_CASE("a 2-GPU step on an 8-GPU node profiles only its 2 GPUs") {
    Snapshot s = node_with_8_gpus();
    s.context.gpus = {"2", "5"};
    s.xid_events = {
        {79, "0000:18:00", 2, "critical", ""}, {13, "0000:2a:00", 3, "warning", ""}, {31, "?", -1, "", ""}};
    filter_gpus_to_allocation(s);
    REQUIRE(s.gpus.size() == 2);
    CHECK(s.gpus[0].index == 2);
    CHECK(s.gpus[1].index == 5);
    REQUIRE(s.xid_events.size() == 2);  // GPU 3's Xid belongs to another job; the unmapped one stays
    CHECK(s.xid_events[0].code == 79);
    CHECK(s.xid_events[1].code == 31);
}

TEST_CASE("with ConstrainDevices NVML renumbers from 0, and the minor number still identifies the GPU") {
    Snapshot s;
    Gpu g;
    g.index = 0;  // NVML's index inside the cgroup
    g.minor_number = 6;
    s.gpus = {g};
    s.context.gpus = {"6"};
    filter_gpus_to_allocation(s);
    CHECK(s.gpus.size() == 1);
}

TEST_CASE("MIG or GPU UUIDs in the allocation match by UUID") {
    Snapshot s = node_with_8_gpus();
    s.context.gpus = {"GPU-7"};
    filter_gpus_to_allocation(s);
    REQUIRE(s.gpus.size() == 1);
    CHECK(s.gpus[0].uuid == "GPU-7");
}

TEST_CASE("an allocation that matches nothing keeps every GPU and says so") {
    Snapshot s = node_with_8_gpus();
    s.context.gpus = {"12"};
    filter_gpus_to_allocation(s);
    CHECK(s.gpus.size() == 8);
    CHECK(s.warnings.size() == 1);
}

TEST_CASE("no allocation known (not in a job): nothing is filtered") {
    Snapshot s = node_with_8_gpus();
    filter_gpus_to_allocation(s);
    CHECK(s.gpus.size() == 8);
    CHECK(s.warnings.empty());
}

TEST_CASE(
    "gres Flags=env_uuid: CUDA_VISIBLE_DEVICES UUIDs without a gres index list pick exactly those GPUs") {
    Snapshot s = node_with_8_gpus();
    s.context.visible_devices = {"GPU-6", "GPU-1"};  // Slurm 25.11+ with env_uuid, in its order
    s.xid_events = {{79, "0000:18:00", 1, "critical", ""}, {79, "0000:2a:00", 3, "critical", ""}};
    filter_gpus_to_allocation(s);
    REQUIRE(s.gpus.size() == 2);
    CHECK(s.gpus[0].uuid == "GPU-1");
    CHECK(s.gpus[1].uuid == "GPU-6");
    REQUIRE(s.xid_events.size() == 1);
    CHECK(s.xid_events[0].gpu_index == 1);
    CHECK(s.warnings.empty());
}

TEST_CASE("CUDA_VISIBLE_DEVICES indices are not node-wide and select nothing on their own") {
    Snapshot s = node_with_8_gpus();
    s.context.visible_devices = {"0", "1"};  // under ConstrainDevices: the job's own numbering
    filter_gpus_to_allocation(s);
    CHECK(s.gpus.size() == 8);
    CHECK(s.warnings.empty());
}

TEST_CASE("Slurm's gres list wins over CUDA_VISIBLE_DEVICES when both are there") {
    Snapshot s = node_with_8_gpus();
    s.context.gpus = {"4"};
    s.context.visible_devices = {"GPU-4"};
    filter_gpus_to_allocation(s);
    REQUIRE(s.gpus.size() == 1);
    CHECK(s.gpus[0].index == 4);
}

TEST_CASE("UUIDs of CUDA_VISIBLE_DEVICES that match no GPU keep every GPU and say so") {
    Snapshot s = node_with_8_gpus();
    s.context.visible_devices = {"GPU-ffff"};
    filter_gpus_to_allocation(s);
    CHECK(s.gpus.size() == 8);
    CHECK(s.warnings.size() == 1);
}
