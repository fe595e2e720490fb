// A fake libnvidia-ml.so.1 for tests and demos: the NVML entry points stallscope uses, defined against
// the same prototypes header as the loader (so a signature mismatch fails to compile), answering from a
// JSON fixture (DCGM's nvml-injection idea, reduced to what we need).
//
// Environment:
//   STALLSCOPE_FAKE_NVML_FIXTURE   JSON fixture path; missing/unparsable at nvmlInit -> DRIVER_NOT_LOADED.
//                                  Re-read whenever its mtime or size changes, so a test can change values
//                                  between samples.
//   STALLSCOPE_FAKE_NVML_SLEEP_MS  sleep this long in every device query (hang injection).
//
// Fixture: {"gpus": [{ "name", "uuid", "pci_bus_id", "pci_device_id", "pci_subsystem_id", "minor_number",
//   "utilization_gpu_pct", "utilization_memory_pct", "memory_total_bytes", "memory_used_bytes",
//   "temperature_c", "power_usage_mw", "enforced_power_limit_mw", "sm_clock_mhz", "max_sm_clock_mhz",
//   "clocks_event_reasons", "violation_power_ns", "violation_thermal_ns", "ecc_volatile_uncorrected",
//   "ecc_volatile_corrected", "remapped_rows": {"correctable", "uncorrectable", "pending", "failure"},
//   "energy_mj", "pcie_link_generation", "pcie_link_width", "pcie_link_max_generation",
//   "pcie_link_max_width", "no_permission": bool, "not_supported": [query...], "errors": {query: nvmlReturn
//   code} }]}
// A query whose key is absent answers NVML_ERROR_NOT_SUPPORTED. Query names: name uuid pci_info
// minor_number utilization memory temperature power_usage enforced_power_limit clock_sm max_clock_sm
// clocks_event_reasons violation_power violation_thermal ecc_uncorrected ecc_corrected remapped_rows energy
// pcie_link (all four link values).
//
// Depth (fake_nvml_depth.cc): "fields" {field id: value}, "processes" [{pid, used_memory_bytes,
// gpu_instance_id, compute_instance_id}] (absent: none running), "gpm" {metric id: value} (absent: the
// device does not support GPM), "mig_devices" [{uuid, gpu_instance_id, compute_instance_id,
// memory_total_bytes, memory_used_bytes, gpm, processes}] with "mig_mode": 1 on the parent.
//
// Built with -DFAKE_NVML_OLD_DRIVER it lacks the entry points newer drivers added (PciInfo_v3,
// ClocksEventReasons, RemappedRows, TotalEnergyConsumption, GPM), to test the loader's fallbacks.
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/fake_nvml/fake_nvml_internal.h"

namespace fake_nvml {

nvmlDevice_st g_devices[kMaxDevices];
nvmlDevice_st g_mig_devices[kMaxDevices][kMaxMig];
std::mutex g_mutex;
json g_fixture;
bool g_initialised = false;

}  // namespace fake_nvml

using namespace fake_nvml;

namespace {

std::string g_path;
timespec g_mtime{};
off_t g_size = -1;
std::map<std::string, unsigned long long> g_query_counts;

}  // namespace

namespace fake_nvml {

// (Re)loads the fixture when it changed. Keeps the last good copy when the file vanished or is being
// rewritten (half-written JSON).
bool refresh() {
    const char* path = std::getenv("STALLSCOPE_FAKE_NVML_FIXTURE");
    if (!path || !*path) return !g_fixture.is_null();
    struct stat st {};
    if (::stat(path, &st) != 0) return !g_fixture.is_null();
    if (g_path == path && st.st_size == g_size && st.st_mtim.tv_sec == g_mtime.tv_sec &&
        st.st_mtim.tv_nsec == g_mtime.tv_nsec)
        return true;
    std::ifstream in(path);
    json parsed = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("gpus") ||
        !parsed["gpus"].is_array())
        return !g_fixture.is_null();
    g_fixture = std::move(parsed);
    g_path = path;
    g_size = st.st_size;
    g_mtime = st.st_mtim;
    return true;
}

void maybe_sleep() {
    const char* ms = std::getenv("STALLSCOPE_FAKE_NVML_SLEEP_MS");
    if (!ms) return;
    const long value = std::strtol(ms, nullptr, 10);
    if (value <= 0) return;
    timespec ts{value / 1000, (value % 1000) * 1000000L};
    while (::nanosleep(&ts, &ts) != 0) {
    }
}

// Looks up the device's JSON object and applies not_supported / errors for `query`. On NVML_SUCCESS,
// `gpu` points at the device's object and `key` (when given) holds a value.
nvmlReturn_t lookup(nvmlDevice_t device, const char* query, const json*& gpu, const char* key) {
    maybe_sleep();
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    refresh();
    ++g_query_counts[query];
    if (nvmlReturn_t rc = device_object(device, gpu); rc != NVML_SUCCESS) return rc;
    if (auto errors = gpu->find("errors"); errors != gpu->end() && errors->is_object()) {
        if (auto code = errors->find(query); code != errors->end() && code->is_number_integer())
            return static_cast<nvmlReturn_t>(code->get<int>());
    }
    if (auto list = gpu->find("not_supported"); list != gpu->end() && list->is_array()) {
        for (const auto& item : *list)
            if (item.is_string() && item.get<std::string>() == query) return NVML_ERROR_NOT_SUPPORTED;
    }
    if (key && !gpu->contains(key)) return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t device_object(nvmlDevice_t device, const json*& object) {
    const auto& gpus = g_fixture["gpus"];
    if (device >= g_devices && device < g_devices + kMaxDevices) {
        if (device->index >= gpus.size()) return NVML_ERROR_GPU_IS_LOST;
        object = &gpus[device->index];
        return NVML_SUCCESS;
    }
    if (device >= &g_mig_devices[0][0] && device < &g_mig_devices[0][0] + kMaxDevices * kMaxMig) {
        if (device->index >= gpus.size()) return NVML_ERROR_GPU_IS_LOST;
        const json& list = gpus[device->index].value("mig_devices", json::array());
        if (!list.is_array() || device->mig < 0 || static_cast<std::size_t>(device->mig) >= list.size())
            return NVML_ERROR_GPU_IS_LOST;
        object = &gpus[device->index]["mig_devices"][static_cast<std::size_t>(device->mig)];
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace fake_nvml

namespace {

template <class T>
nvmlReturn_t get_number(nvmlDevice_t device, const char* query, const char* key, T* out) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* gpu = nullptr;
    if (nvmlReturn_t rc = lookup(device, query, gpu, key); rc != NVML_SUCCESS) return rc;
    const auto& value = (*gpu)[key];
    if (!value.is_number_unsigned() && !value.is_number_integer()) return NVML_ERROR_UNKNOWN;
    *out = value.get<T>();
    return NVML_SUCCESS;
}

nvmlReturn_t get_string(nvmlDevice_t device, const char* query, const char* key, char* out,
                        unsigned int length) {
    if (!out || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* gpu = nullptr;
    if (nvmlReturn_t rc = lookup(device, query, gpu, key); rc != NVML_SUCCESS) return rc;
    const std::string text = (*gpu)[key].is_string() ? (*gpu)[key].get<std::string>() : "";
    if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(out, text.c_str(), text.size() + 1);
    return NVML_SUCCESS;
}

unsigned int hex_or_number(const json& value) {
    if (value.is_number_unsigned() || value.is_number_integer()) return value.get<unsigned int>();
    if (value.is_string())
        return static_cast<unsigned int>(std::strtoul(value.get<std::string>().c_str(), nullptr, 0));
    return 0;
}

nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t* pci) {
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* gpu = nullptr;
    if (nvmlReturn_t rc = lookup(device, "pci_info", gpu, "pci_bus_id"); rc != NVML_SUCCESS) return rc;
    *pci = nvmlPciInfo_t{};
    const std::string bus_id = (*gpu)["pci_bus_id"].get<std::string>();  // "00000000:18:00.0"
    unsigned int domain = 0, bus = 0, dev = 0, function = 0;
    std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function);
    std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", domain, bus, dev, function);
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffff, bus, dev,
                  function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = gpu->contains("pci_device_id") ? hex_or_number((*gpu)["pci_device_id"]) : 0;
    pci->pciSubSystemId = gpu->contains("pci_subsystem_id") ? hex_or_number((*gpu)["pci_subsystem_id"]) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t clocks_reasons(nvmlDevice_t device, unsigned long long* reasons) {
    return get_number(device, "clocks_event_reasons", "clocks_event_reasons", reasons);
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
    std::lock_guard lock(g_mutex);
    g_fixture = json();
    g_path.clear();
    g_size = -1;
    if (!refresh()) return NVML_ERROR_DRIVER_NOT_LOADED;
    for (unsigned int i = 0; i < kMaxDevices; ++i) {
        g_devices[i] = {i, -1};
        for (int m = 0; m < static_cast<int>(kMaxMig); ++m) g_mig_devices[i][m] = {i, m};
    }
    g_initialised = true;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    std::lock_guard lock(g_mutex);
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    g_initialised = false;
    return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
        case NVML_SUCCESS:
            return "Success";
        case NVML_ERROR_UNINITIALIZED:
            return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT:
            return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED:
            return "Not Supported";
        case NVML_ERROR_NO_PERMISSION:
            return "Insufficient Permissions";
        case NVML_ERROR_DRIVER_NOT_LOADED:
            return "Driver Not Loaded";
        case NVML_ERROR_TIMEOUT:
            return "Timeout";
        case NVML_ERROR_GPU_IS_LOST:
            return "GPU is lost";
        case NVML_ERROR_RESET_REQUIRED:
            return "GPU requires reset";
        default:
            return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
    if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    refresh();
    *deviceCount = static_cast<unsigned int>(std::min<std::size_t>(g_fixture["gpus"].size(), kMaxDevices));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
    if (!device) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    refresh();
    const auto& gpus = g_fixture["gpus"];
    if (index >= gpus.size() || index >= kMaxDevices) return NVML_ERROR_INVALID_ARGUMENT;
    // What the driver answers for a GPU outside the caller's device cgroup.
    if (gpus[index].value("no_permission", false)) return NVML_ERROR_NO_PERMISSION;
    *device = &g_devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
    return get_string(device, "name", "name", name, length);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
    return get_string(device, "uuid", "uuid", uuid, length);
}
#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
    return pci_info(device, pci);
}
#endif
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
    return pci_info(device, pci);
}
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
    return get_number(device, "minor_number", "minor_number", minorNumber);
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
    if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int memory = 0;
    if (nvmlReturn_t rc = get_number(device, "utilization", "utilization_gpu_pct", &utilization->gpu);
        rc != NVML_SUCCESS)
        return rc;
    get_number(device, "utilization", "utilization_memory_pct", &memory);
    utilization->memory = memory;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = get_number(device, "memory", "memory_total_bytes", &memory->total);
        rc != NVML_SUCCESS)
        return rc;
    if (nvmlReturn_t rc = get_number(device, "memory", "memory_used_bytes", &memory->used);
        rc != NVML_SUCCESS)
        return rc;
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
    if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    return get_number(device, "temperature", "temperature_c", temp);
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
    return get_number(device, "power_usage", "power_usage_mw", power);
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
    return get_number(device, "enforced_power_limit", "enforced_power_limit_mw", limit);
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
    if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
    return get_number(device, "clock_sm", "sm_clock_mhz", clock);
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
    if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
    return get_number(device, "max_clock_sm", "max_sm_clock_mhz", clock);
}
#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) {
    return clocks_reasons(device, reasons);
}
#endif
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
    return clocks_reasons(device, reasons);
}
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                          nvmlViolationTime_t* violTime) {
    if (!violTime) return NVML_ERROR_INVALID_ARGUMENT;
    violTime->referenceTime = 0;
    if (perfPolicyType == NVML_PERF_POLICY_POWER)
        return get_number(device, "violation_power", "violation_power_ns", &violTime->violationTime);
    if (perfPolicyType == NVML_PERF_POLICY_THERMAL)
        return get_number(device, "violation_thermal", "violation_thermal_ns", &violTime->violationTime);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType, unsigned long long* eccCounts) {
    if (counterType != NVML_VOLATILE_ECC) return NVML_ERROR_NOT_SUPPORTED;
    if (errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
        return get_number(device, "ecc_uncorrected", "ecc_volatile_uncorrected", eccCounts);
    return get_number(device, "ecc_corrected", "ecc_volatile_corrected", eccCounts);
}
#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
                                       unsigned int* isPending, unsigned int* failureOccurred) {
    if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
    std::lock_guard lock(g_mutex);
    const json* gpu = nullptr;
    if (nvmlReturn_t rc = lookup(device, "remapped_rows", gpu, "remapped_rows"); rc != NVML_SUCCESS)
        return rc;
    const json& rows = (*gpu)["remapped_rows"];
    *corrRows = rows.value("correctable", 0u);
    *uncRows = rows.value("uncorrectable", 0u);
    *isPending = rows.value("pending", false) ? 1 : 0;
    *failureOccurred = rows.value("failure", false) ? 1 : 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
    return get_number(device, "energy", "energy_mj", energy);
}
#endif
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen) {
    return get_number(device, "pcie_link", "pcie_link_generation", currLinkGen);
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth) {
    return get_number(device, "pcie_link", "pcie_link_width", currLinkWidth);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen) {
    return get_number(device, "pcie_link", "pcie_link_max_generation", maxLinkGen);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth) {
    return get_number(device, "pcie_link", "pcie_link_max_width", maxLinkWidth);
}

// Test hook (not NVML): how many times `query` reached a device, to check that a field NVML called
// NOT_SUPPORTED is not asked again every sample.
unsigned long long stallscope_fake_nvml_query_count(const char* query) {
    std::lock_guard lock(g_mutex);
    auto it = g_query_counts.find(query ? query : "");
    return it == g_query_counts.end() ? 0 : it->second;
}

}  // extern "C"
