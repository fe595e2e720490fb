// State shared by the fake libnvidia-ml's translation units (fake_nvml.cc: identity and gauges;
// fake_nvml_depth.cc: field values, processes, MIG, GPM). Not part of any NVML ABI.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>

#include "libstallscope/sources/nvml/nvml_abi.h"

struct nvmlDevice_st {
    unsigned int index;  // the GPU's position in the fixture's "gpus"
    int mig;             // -1: the GPU itself; else its position in "mig_devices"
};

namespace fake_nvml {

using nlohmann::json;

inline constexpr unsigned int kMaxDevices = 64;
inline constexpr unsigned int kMaxMig = 8;
extern nvmlDevice_st g_devices[kMaxDevices];
extern nvmlDevice_st g_mig_devices[kMaxDevices][kMaxMig];
extern std::mutex g_mutex;  // held by every entry point
extern json g_fixture;
extern bool g_initialised;

bool refresh();
// The fixture object of a GPU or MIG handle.
nvmlReturn_t device_object(nvmlDevice_t device, const json*& object);
// device_object plus the fixture's "errors" / "not_supported" for `query`, the sleep injection and the
// query counter; with `key`, NOT_SUPPORTED when the object lacks it. Caller holds g_mutex.
nvmlReturn_t lookup(nvmlDevice_t device, const char* query, const json*& gpu, const char* key = nullptr);

}  // namespace fake_nvml
