#include "libstallscope/sources/nvml/nvml_depth.h"

#include <climits>
#include <cmath>
#include <iterator>

namespace stallscope {
namespace {

constexpr nvmlGpmMetricId_t kGpmMetrics[] = {
    NVML_GPM_METRIC_SM_UTIL,
    NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};
static_assert(std::size(kGpmMetrics) <= NVML_GPM_METRIC_MAX);

Gauge* gpm_target(GpmMetrics& m, unsigned id) {
    switch (id) {
        case NVML_GPM_METRIC_SM_UTIL:
            return &m.sm_active_pct;
        case NVML_GPM_METRIC_SM_OCCUPANCY:
            return &m.sm_occupancy_pct;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
            return &m.tensor_active_pct;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
            return &m.dram_bandwidth_pct;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
            return &m.pcie_tx_mib_per_s;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
            return &m.pcie_rx_mib_per_s;
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
            return &m.nvlink_tx_mib_per_s;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
            return &m.nvlink_rx_mib_per_s;
        default:
            return nullptr;
    }
}

// A field value as an unsigned counter, whatever type NVML chose for it; negative or non-finite is null.
Counter field_u64(const nvmlFieldValue_t& v) {
    switch (v.valueType) {
        case NVML_VALUE_TYPE_UNSIGNED_INT:
            return v.value.uiVal;
        case NVML_VALUE_TYPE_UNSIGNED_LONG:
            return v.value.ulVal;
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
            return v.value.ullVal;
        case NVML_VALUE_TYPE_UNSIGNED_SHORT:
            return v.value.usVal;
        case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
            if (v.value.sllVal >= 0) return static_cast<std::uint64_t>(v.value.sllVal);
            return std::nullopt;
        case NVML_VALUE_TYPE_SIGNED_INT:
            if (v.value.siVal >= 0) return static_cast<std::uint64_t>(v.value.siVal);
            return std::nullopt;
        case NVML_VALUE_TYPE_DOUBLE:
            if (std::isfinite(v.value.dVal) && v.value.dVal >= 0 && v.value.dVal < 9.0e18)  // llround range
                return static_cast<std::uint64_t>(std::llround(v.value.dVal));
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

GpmSampler::GpmSampler(const NvmlFunctions& fn, nvmlDevice_t device, std::optional<unsigned> gpu_instance_id)
    : fn_(fn), device_(device), gpu_instance_id_(gpu_instance_id) {}

GpmSampler::~GpmSampler() {
    for (auto& b : buffers_)
        if (b && fn_.gpm_sample_free) fn_.gpm_sample_free(b);
}

nvmlReturn_t GpmSampler::take(int slot) {
    if (!buffers_[slot]) {
        if (nvmlReturn_t rc = fn_.gpm_sample_alloc(&buffers_[slot]); rc != NVML_SUCCESS) {
            buffers_[slot] = nullptr;
            return rc;
        }
    }
    if (gpu_instance_id_) {
        if (!fn_.gpm_mig_sample_get) return NVML_ERROR_FUNCTION_NOT_FOUND;
        return fn_.gpm_mig_sample_get(device_, *gpu_instance_id_, buffers_[slot]);
    }
    return fn_.gpm_sample_get(device_, buffers_[slot]);
}

nvmlReturn_t GpmSampler::sample(double now, std::optional<GpmMetrics>& out) {
    out.reset();
    if (newest_ >= 0 && now - taken_at_[newest_] < kGpmMinPairSeconds) return NVML_SUCCESS;
    const int slot = newest_ < 0 ? 0 : 1 - newest_;
    if (nvmlReturn_t rc = take(slot); rc != NVML_SUCCESS) return rc;
    taken_at_[slot] = now;
    const int previous = newest_;
    newest_ = slot;
    if (previous < 0) return NVML_SUCCESS;

    nvmlGpmMetricsGet_t request{};
    request.version = NVML_GPM_METRICS_GET_VERSION;
    request.numMetrics = static_cast<unsigned>(std::size(kGpmMetrics));
    request.sample1 = buffers_[previous];
    request.sample2 = buffers_[slot];
    for (unsigned i = 0; i < request.numMetrics; ++i) request.metrics[i].metricId = kGpmMetrics[i];
    if (nvmlReturn_t rc = fn_.gpm_metrics_get(&request); rc != NVML_SUCCESS) return rc;
    GpmMetrics metrics;
    for (unsigned i = 0; i < request.numMetrics; ++i) {
        const nvmlGpmMetric_t& m = request.metrics[i];
        Gauge* target = gpm_target(metrics, kGpmMetrics[i]);
        if (target && m.nvmlReturn == NVML_SUCCESS && std::isfinite(m.value) && m.value >= 0)
            *target = m.value;
    }
    out = metrics;
    return NVML_SUCCESS;
}

nvmlReturn_t read_interconnect(const NvmlFunctions& fn, nvmlDevice_t device,
                               std::optional<GpuInterconnect>& out, std::vector<unsigned>& failed) {
    out.reset();
    struct Wanted {
        unsigned id, scope;
        Counter GpuInterconnect::*target;
        std::uint64_t scale;
    };
    static constexpr Wanted kWanted[] = {
        {NVML_FI_DEV_NVLINK_LINK_COUNT, 0, &GpuInterconnect::nvlink_link_count, 1},
        {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, UINT_MAX, &GpuInterconnect::nvlink_tx_bytes, 1024},
        {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, UINT_MAX, &GpuInterconnect::nvlink_rx_bytes, 1024},
        {NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0, &GpuInterconnect::nvlink_crc_errors, 1},
        {NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0, &GpuInterconnect::nvlink_replay_errors, 1},
        {NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0, &GpuInterconnect::nvlink_recovery_errors, 1},
        {NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0, &GpuInterconnect::pcie_replay_count, 1},
        {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0, &GpuInterconnect::pcie_tx_bytes, 1},
        {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0, &GpuInterconnect::pcie_rx_bytes, 1},
    };
    constexpr int kCount = static_cast<int>(std::size(kWanted));
    nvmlFieldValue_t values[kCount] = {};
    for (int i = 0; i < kCount; ++i) {
        values[i].fieldId = kWanted[i].id;
        values[i].scopeId = kWanted[i].scope;
    }
    if (nvmlReturn_t rc = fn.get_field_values(device, kCount, values); rc != NVML_SUCCESS) return rc;
    GpuInterconnect links;
    bool any = false;
    for (int i = 0; i < kCount; ++i) {
        const Counter value = values[i].nvmlReturn == NVML_SUCCESS ? field_u64(values[i]) : std::nullopt;
        if (!value || *value > UINT64_MAX / kWanted[i].scale) {
            failed.push_back(kWanted[i].id);
            continue;
        }
        links.*kWanted[i].target = *value * kWanted[i].scale;
        any = true;
    }
    if (!any) return NVML_ERROR_NOT_SUPPORTED;
    out = links;
    return NVML_SUCCESS;
}

nvmlReturn_t read_processes(const NvmlFunctions& fn, nvmlDevice_t device, std::vector<GpuProcess>& out) {
    out.clear();
    std::vector<nvmlProcessInfo_t> infos(32);
    unsigned int count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = fn.get_compute_processes(device, &count, infos.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && count < 65536) {  // processes started between the calls
        infos.resize(count + 8);
        count = static_cast<unsigned>(infos.size());
        rc = fn.get_compute_processes(device, &count, infos.data());
    }
    if (rc != NVML_SUCCESS) return rc;
    for (unsigned i = 0; i < count && i < infos.size(); ++i) {
        GpuProcess p;
        p.pid = infos[i].pid;
        if (infos[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) p.used_memory_bytes = infos[i].usedGpuMemory;
        if (infos[i].gpuInstanceId != 0xFFFFFFFFu)
            p.gpu_instance_id = static_cast<int>(infos[i].gpuInstanceId);
        if (infos[i].computeInstanceId != 0xFFFFFFFFu)
            p.compute_instance_id = static_cast<int>(infos[i].computeInstanceId);
        out.push_back(std::move(p));
    }
    return NVML_SUCCESS;
}

bool visible_entry_names_mig(const std::string& entry, const Gpu& instance) {
    if (entry == instance.uuid) return true;
    if (!instance.mig || entry.rfind("MIG-GPU-", 0) != 0) return false;
    const MigInstance& m = *instance.mig;
    if (!m.gpu_instance_id || !m.compute_instance_id) return false;
    return entry == "MIG-" + m.parent_uuid + "/" + std::to_string(*m.gpu_instance_id) + "/" +
                        std::to_string(*m.compute_instance_id);
}

}  // namespace stallscope
