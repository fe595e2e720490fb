#include "libstallscope/sources/sampler.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "libstallscope/sources/allocation.h"
#include "libstallscope/sources/deadline_source.h"
#include "libstallscope/sources/factories.h"

namespace stallscope {

std::string local_hostname() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
    // Short name, as Slurm's NodeName usually is and as file names want it.
    std::string host(name);
    if (auto dot = host.find('.'); dot != std::string::npos) host.resize(dot);
    return host;
}

double wall_clock_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

Sampler::Sampler(std::vector<std::unique_ptr<Source>> sources)
    : sources_(std::move(sources)), host_(local_hostname()) {}

Sampler Sampler::for_node(const Roots& roots, double driver_timeout_seconds) {
    std::vector<std::unique_ptr<Source>> s;
    s.push_back(make_context_source(roots));
    s.push_back(make_procfs_source(roots));
    s.push_back(make_ethtool_source(roots));
    s.push_back(make_infiniband_source(roots));
    s.push_back(make_amdgpu_source(roots));
    s.push_back(with_deadline(make_nvidia_source(roots), driver_timeout_seconds));
    s.push_back(make_kmsg_source(roots));
    s.push_back(make_nccl_source(roots));
    s.push_back(make_cgroup_source(roots));
    return Sampler(std::move(s));
}

Snapshot Sampler::sample() {
    return sample_at(wall_clock_now());
}

Snapshot Sampler::sample(Snapshot&& recycled) {
    return sample_at(wall_clock_now(), std::move(recycled));
}

Snapshot Sampler::sample_at(double time, Snapshot&& recycled) {
    for (auto& source : sources_) source->recycle(recycled);
    return sample_at(time);
}

Snapshot Sampler::sample_at(double time) {
    Snapshot snap;
    snap.time = time;
    snap.host = host_;
    for (auto& source : sources_) {
        const auto started = std::chrono::steady_clock::now();
        try {
            source->sample(snap);
        } catch (const std::exception& e) {
            snap.collector_failures[std::string(source->name())] = std::string("crashed: ") + e.what();
        } catch (...) {
            snap.collector_failures[std::string(source->name())] = "crashed: unknown exception";
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (took > slow_seconds_) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "%.*s: collector took %.1f s (slow driver or filesystem?)",
                          static_cast<int>(source->name().size()), source->name().data(), took);
            snap.warnings.emplace_back(msg);
        }
    }
    filter_gpus_to_allocation(snap);
    return snap;
}

}  // namespace stallscope
