// Internal to the Prometheus textfile sink: one writer per area, each emitting whole families
// (HELP/TYPE then every sample), bounded by textfile_bound (prometheus_textfile.h).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/sinks/exposition_writer.h"
#include "libstallscope/sinks/prometheus_textfile.h"

namespace stallscope::textfile {

struct Dropped {
    std::size_t gpus = 0, rdma_ports = 0, interfaces = 0, reasons = 0;
};

// The entities a document covers, after the per-kind caps.
struct Entities {
    std::span<const Gpu> gpus;
    std::span<const RdmaPort> rdma_ports;
    std::vector<const NetInterface*> interfaces;  // `lo` skipped; reused buffer
    std::vector<const Reason*> reasons;           // de-duplicated by (code, category, severity, subject)
    Dropped dropped;
};
void select_entities(const Snapshot& s, const Profile& p, Entities& out);

void write_core_families(ExpositionWriter& w, const Snapshot& s, const Profile& p, const Rates* rates,
                         const Entities& e);
void write_gpu_families(ExpositionWriter& w, const Entities& e,
                        const std::map<std::string, GpuXidTotal>& xid_totals);
void write_gpu_depth_families(ExpositionWriter& w, const Entities& e);
void write_job_families(ExpositionWriter& w, const Snapshot& s);
void write_network_families(ExpositionWriter& w, const Entities& e);
void write_rdma_families(ExpositionWriter& w, const Entities& e);

// Small integer -> decimal text in a caller's stack buffer (label values like gpu="3", port="1").
std::string_view int_label(char (&buf)[16], long value);

}  // namespace stallscope::textfile
