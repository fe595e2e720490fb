#include "libstallscope/model/snapshot_json_text_depth.h"

namespace stallscope::json_text {
namespace {

// Each writer mirrors its builder in snapshot_json_depth.cc key for key, in its order (ordered_json keeps
// insertion order); the builders' or_null (null when unset) is value(optional)'s rule. Built as trees and
// then written, a GPU's depth objects were ~a quarter of `stallscope export`'s time on a GPU node; the job
// cgroup, in every sample of a job, is one more object of the same kind.

void write_gpm(TextWriter& w, const GpmMetrics& g) {
    w.open_object();
    w.member("sm_active_pct", g.sm_active_pct);
    w.member("sm_occupancy_pct", g.sm_occupancy_pct);
    w.member("tensor_active_pct", g.tensor_active_pct);
    w.member("dram_bandwidth_pct", g.dram_bandwidth_pct);
    w.member("pcie_tx_mib_per_s", g.pcie_tx_mib_per_s);
    w.member("pcie_rx_mib_per_s", g.pcie_rx_mib_per_s);
    w.member("nvlink_tx_mib_per_s", g.nvlink_tx_mib_per_s);
    w.member("nvlink_rx_mib_per_s", g.nvlink_rx_mib_per_s);
    w.close_object();
}

void write_interconnect(TextWriter& w, const GpuInterconnect& l) {
    w.open_object();
    w.member("nvlink_link_count", l.nvlink_link_count);
    w.member("nvlink_tx_bytes", l.nvlink_tx_bytes);
    w.member("nvlink_rx_bytes", l.nvlink_rx_bytes);
    w.member("nvlink_crc_errors", l.nvlink_crc_errors);
    w.member("nvlink_replay_errors", l.nvlink_replay_errors);
    w.member("nvlink_recovery_errors", l.nvlink_recovery_errors);
    w.member("pcie_replay_count", l.pcie_replay_count);
    w.member("pcie_tx_bytes", l.pcie_tx_bytes);
    w.member("pcie_rx_bytes", l.pcie_rx_bytes);
    w.close_object();
}

void write_mig(TextWriter& w, const MigInstance& m) {
    w.open_object();
    w.member("parent_uuid", m.parent_uuid);
    w.member("parent_pci_bus_id", m.parent_pci_bus_id);
    w.member("parent_index", m.parent_index);
    w.member("gpu_instance_id", m.gpu_instance_id);
    w.member("compute_instance_id", m.compute_instance_id);
    w.member("gauges_from_parent", m.gauges_from_parent);
    w.close_object();
}

void write_process(TextWriter& w, const GpuProcess& p) {
    w.open_object();
    w.member("pid", p.pid);
    w.member("used_memory_bytes", p.used_memory_bytes);
    w.member("gpu_instance_id", p.gpu_instance_id);
    w.member("compute_instance_id", p.compute_instance_id);
    w.member("cgroup", p.cgroup);
    w.member("job_id", p.job_id);
    w.member("uid", p.uid);  // Json(uint32_t): an unsigned number
    w.member("owner", p.owner);
    w.close_object();
}

}  // namespace

void write_psi(TextWriter& w, const Psi& p) {
    w.open_object();
    w.member("cpu_some_avg10", p.cpu_some_avg10);
    w.member("cpu_some_avg60", p.cpu_some_avg60);
    w.member("io_some_avg10", p.io_some_avg10);
    w.member("io_some_avg60", p.io_some_avg60);
    w.member("io_full_avg10", p.io_full_avg10);
    w.member("io_full_avg60", p.io_full_avg60);
    w.member("memory_some_avg10", p.memory_some_avg10);
    w.member("memory_some_avg60", p.memory_some_avg60);
    w.member("memory_full_avg10", p.memory_full_avg10);
    w.member("memory_full_avg60", p.memory_full_avg60);
    w.member("cpu_some_total_us", p.cpu_some_total_us);
    w.member("io_some_total_us", p.io_some_total_us);
    w.member("io_full_total_us", p.io_full_total_us);
    w.member("memory_some_total_us", p.memory_some_total_us);
    w.member("memory_full_total_us", p.memory_full_total_us);
    w.close_object();
}

void write_gpu_depth_members(TextWriter& w, const Gpu& g) {
    if (g.gpm) {
        w.key("gpm");
        write_gpm(w, *g.gpm);
    }
    if (g.interconnect) {
        w.key("interconnect");
        write_interconnect(w, *g.interconnect);
    }
    if (g.mig) {
        w.key("mig");
        write_mig(w, *g.mig);
    }
    if (g.processes) {
        w.key("processes");
        w.open_array();
        for (const auto& p : *g.processes) {
            w.separator();
            write_process(w, p);
        }
        w.close_array();
    }
}

void write_job_cgroup(TextWriter& w, const JobCgroup& c) {
    w.open_object();
    w.member("version", c.version);
    w.member("path", c.path);
    w.member("scope", c.scope);
    w.member("job_id", c.job_id);
    w.member("step_id", c.step_id);
    w.member("memory_current_bytes", c.memory_current_bytes);
    w.member("memory_peak_bytes", c.memory_peak_bytes);
    w.member("memory_max_bytes", c.memory_max_bytes);
    w.member("memory_oom_events", c.memory_oom_events);
    w.member("memory_oom_kill_events", c.memory_oom_kill_events);
    w.member("cpu_usage_usec", c.cpu_usage_usec);
    w.member("cpu_user_usec", c.cpu_user_usec);
    w.member("cpu_system_usec", c.cpu_system_usec);
    w.member("cpu_nr_periods", c.cpu_nr_periods);
    w.member("cpu_nr_throttled", c.cpu_nr_throttled);
    w.member("cpu_throttled_usec", c.cpu_throttled_usec);
    w.key("psi");
    write_psi(w, c.psi);
    w.close_object();
}

}  // namespace stallscope::json_text
