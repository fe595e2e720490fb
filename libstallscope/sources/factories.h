// Constructors of every source, one per folder. The sampler composes them (sampler.h).
#pragma once

#include <memory>

#include "libstallscope/sources/source.h"
#include "libstallscope/util/roots.h"

namespace stallscope {

// Host stats from <procfs>: loadavg, meminfo, stat, vmstat, pressure/*; and every row of net/dev.
std::unique_ptr<Source> make_procfs_source(const Roots& roots);
// <sysfs>/class/infiniband/*/ports/*: state, rate, link layer, netdev, counters/, hw_counters/.
std::unique_ptr<Source> make_infiniband_source(const Roots& roots);
// PFC pause and discard fields per interface: SIOCETHTOOL, or `ethtool -S` text under roots.ethtool.
// Attaches to the interfaces the procfs source found, so it runs after it.
std::unique_ptr<Source> make_ethtool_source(const Roots& roots);
// Slurm / Kubernetes job context (environment, else a bounded /proc/*/environ scan).
std::unique_ptr<Source> make_context_source(const Roots& roots);
// NVIDIA GPUs through NVML (dlopen of roots.nvml_library); falls back to nvidia-smi CSV when NVML
// cannot load, else reports no GPUs with a warning.
std::unique_ptr<Source> make_nvidia_source(const Roots& roots);
// AMD GPUs from <sysfs>/class/drm/card*/device.
std::unique_ptr<Source> make_amdgpu_source(const Roots& roots);
// NVIDIA Xid lines from <dev>/kmsg, mapped to GPUs by PCI bus id; runs after the GPU sources.
std::unique_ptr<Source> make_kmsg_source(const Roots& roots);
// NCCL/RCCL: RAS STATUS/MONITOR (node 0), Inspector JSONL, NCCL/PyTorch logs (sources/nccl/nccl_source.h).
std::unique_ptr<Source> make_nccl_source(const Roots& roots);
// The job's own cgroup (<procfs>/self/cgroup -> <sysfs>/fs/cgroup/...job_*) and the owner of each GPU
// process; runs after the GPU sources (sources/cgroup/cgroup_source.cc).
std::unique_ptr<Source> make_cgroup_source(const Roots& roots);

}  // namespace stallscope
