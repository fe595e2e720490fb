// The fake libnvidia-ml's issue-15 entry points: field values (NVLink/PCIe), compute processes, MIG
// and GPM, answered from the fixture keys described in fake_nvml.cc. The GPM fake enforces what real
// NVML needs from a caller: two samples of the same device, taken in order and >= 100 ms apart.
#include <time.h>

#include <string>

#include "tests/fake_nvml/fake_nvml_internal.h"

struct nvmlGpmSample_st {
    bool filled = false;
    unsigned int gpu = 0;
    int mig = -1;
    unsigned long long sequence = 0;
    timespec taken{};
};

using namespace fake_nvml;

namespace {

const json* numeric(const json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || !(it->is_number_unsigned() || it->is_number_integer() || it->is_number_float()))
        return nullptr;
    return &*it;
}

nvmlReturn_t get_unsigned(nvmlDevice_t device, const char* query, const char* key, unsigned int* out) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, query, object, key); rc != NVML_SUCCESS) return rc;
    const json* value = numeric(*object, key);
    if (!value) return NVML_ERROR_UNKNOWN;
    *out = value->get<unsigned int>();
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
unsigned long long g_gpm_sequence = 0;

double seconds_between(const timespec& a, const timespec& b) {
    return static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e9;
}

nvmlReturn_t fill_sample(nvmlDevice_t device, const json& object, nvmlGpmSample_t sample) {
    if (!object.contains("gpm")) return NVML_ERROR_NOT_SUPPORTED;
    sample->filled = true;
    sample->gpu = device->index;
    sample->mig = device->mig;
    sample->sequence = ++g_gpm_sequence;
    ::clock_gettime(CLOCK_MONOTONIC, &sample->taken);
    return NVML_SUCCESS;
}
#endif

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values) {
    if (valuesCount < 0 || (valuesCount > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "field_values", object); rc != NVML_SUCCESS) return rc;
    const json fields = object->value("fields", json::object());
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < valuesCount; ++i) {
        nvmlFieldValue_t& v = values[i];
        v.timestamp = static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
        v.latencyUsec = 0;
        auto it = fields.find(std::to_string(v.fieldId));
        if (it == fields.end() || !(it->is_number_unsigned() || it->is_number_integer())) {
            v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        v.nvmlReturn = NVML_SUCCESS;
        if (it->is_number_integer() && it->get<long long>() < 0) {  // as some drivers type error counters
            v.valueType = NVML_VALUE_TYPE_SIGNED_LONG_LONG;
            v.value.sllVal = it->get<long long>();
        } else {
            v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
            v.value.ullVal = it->get<unsigned long long>();
        }
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
    if (!infoCount) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "processes", object); rc != NVML_SUCCESS) return rc;
    const json list = object->value("processes", json::array());  // none running when absent
    if (!list.is_array()) return NVML_ERROR_UNKNOWN;
    if (*infoCount < list.size() || (!infos && !list.empty())) {
        *infoCount = static_cast<unsigned int>(list.size());
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *infoCount = static_cast<unsigned int>(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& p = list[i];
        infos[i].pid = p.value("pid", 0u);
        infos[i].usedGpuMemory = p.contains("used_memory_bytes") && p["used_memory_bytes"].is_number()
                                     ? p["used_memory_bytes"].get<unsigned long long>()
                                     : NVML_VALUE_NOT_AVAILABLE;
        infos[i].gpuInstanceId = p.value("gpu_instance_id", 0xFFFFFFFFu);
        infos[i].computeInstanceId = p.value("compute_instance_id", 0xFFFFFFFFu);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode) {
    if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = get_unsigned(device, "mig_mode", "mig_mode", currentMode); rc != NVML_SUCCESS)
        return rc;
    *pendingMode = *currentMode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "mig_mode", object, "mig_mode"); rc != NVML_SUCCESS) return rc;
    *count = 7;  // an H100/A100 holds at most 7 instances; unused slots answer NOT_FOUND
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
    if (!migDevice) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "mig_handle", object, "mig_mode"); rc != NVML_SUCCESS) return rc;
    if (device->mig >= 0) return NVML_ERROR_INVALID_ARGUMENT;  // asked of an instance, not a GPU
    const json list = object->value("mig_devices", json::array());
    if (!list.is_array() || index >= list.size() || index >= kMaxMig) return NVML_ERROR_NOT_FOUND;
    *migDevice = &g_mig_devices[device->index][index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
    return get_unsigned(device, "gpu_instance_id", "gpu_instance_id", id);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
    return get_unsigned(device, "compute_instance_id", "compute_instance_id", id);
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
    if (!gpmSupport || gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "gpm_support", object); rc != NVML_SUCCESS) return rc;
    bool supported = object->contains("gpm");
    for (const auto& mig : object->value("mig_devices", json::array())) supported |= mig.contains("gpm");
    gpmSupport->isSupportedDevice = object->value("gpm_supported", supported) ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
    if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
    *gpmSample = new nvmlGpmSample_st();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
    delete gpmSample;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
    if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "gpm_sample", object); rc != NVML_SUCCESS) return rc;
    return fill_sample(device, *object, gpmSample);
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample) {
    if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* object = nullptr;
    if (nvmlReturn_t rc = lookup(device, "gpm_mig_sample", object); rc != NVML_SUCCESS) return rc;
    if (device->mig >= 0) return NVML_ERROR_INVALID_ARGUMENT;
    const json& list = (*object).contains("mig_devices") ? (*object)["mig_devices"] : json::array();
    for (std::size_t i = 0; i < list.size() && i < kMaxMig; ++i)
        if (list[i].value("gpu_instance_id", -1) == static_cast<long long>(gpuInstanceId))
            return fill_sample(&g_mig_devices[device->index][i], list[i], gpmSample);
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
    if (!m || m->version != NVML_GPM_METRICS_GET_VERSION || m->numMetrics > NVML_GPM_METRIC_MAX)
        return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    const nvmlGpmSample_st* a = m->sample1;
    const nvmlGpmSample_st* b = m->sample2;
    if (!a || !b || !a->filled || !b->filled || a->gpu != b->gpu || a->mig != b->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    // Real GPM needs sample1 before sample2 and >= 100 ms between them; a caller that breaks either is
    // a bug this fake must expose.
    if (a->sequence >= b->sequence || seconds_between(a->taken, b->taken) < 0.1)
        return NVML_ERROR_INVALID_ARGUMENT;
    refresh();
    const nvmlDevice_t device = a->mig < 0 ? &g_devices[a->gpu] : &g_mig_devices[a->gpu][a->mig];
    const json* object = nullptr;
    if (nvmlReturn_t rc = device_object(device, object); rc != NVML_SUCCESS) return rc;
    const json gpm = object->value("gpm", json::object());
    for (unsigned int i = 0; i < m->numMetrics; ++i) {
        nvmlGpmMetric_t& metric = m->metrics[i];
        auto it = gpm.find(std::to_string(metric.metricId));
        if (it == gpm.end() || !it->is_number()) {
            metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        metric.nvmlReturn = NVML_SUCCESS;
        metric.value = it->get<double>();
    }
    return NVML_SUCCESS;
}
#endif

}  // extern "C"
