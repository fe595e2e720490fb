#include "libstallscope/sources/nvml/nvml_library.h"

#include <dlfcn.h>

namespace stallscope {

namespace {

template <class Fn>
void resolve(void* handle, const char* symbol, Fn& out) {
    out = reinterpret_cast<Fn>(::dlsym(handle, symbol));
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(const std::string& path, std::string& error) {
    std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
    lib->path_ = path;
    // RTLD_LOCAL: NVML's symbols must not satisfy anyone else's lookups; RTLD_NOW: fail here, not
    // mid-sample, when the library is broken.
    lib->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle_) {
        const char* why = ::dlerror();
        error = why ? why : (path + ": dlopen failed");
        return nullptr;
    }
    void* h = lib->handle_;
    NvmlFunctions& f = lib->fn_;
    resolve(h, "nvmlInit_v2", f.init);
    resolve(h, "nvmlShutdown", f.shutdown);
    resolve(h, "nvmlDeviceGetCount_v2", f.get_count);
    resolve(h, "nvmlDeviceGetHandleByIndex_v2", f.get_handle_by_index);
    for (auto [name, ptr] : {std::pair{"nvmlInit_v2", f.init != nullptr},
                             {"nvmlShutdown", f.shutdown != nullptr},
                             {"nvmlDeviceGetCount_v2", f.get_count != nullptr},
                             {"nvmlDeviceGetHandleByIndex_v2", f.get_handle_by_index != nullptr}}) {
        if (!ptr) {
            error = path + ": not a usable NVML library (no " + name + ")";
            return nullptr;  // destructor dlcloses; nothing initialised yet
        }
    }

    auto optional = [&](const char* symbol, auto& out) {
        resolve(h, symbol, out);
        if (!out) lib->missing_.emplace_back(symbol);
    };
    auto optional_or = [&](const char* symbol, const char* fallback, auto& out) {
        if (!fallback) return optional(symbol, out);
        resolve(h, symbol, out);
        if (!out) optional(fallback, out);
    };
#define STALLSCOPE_NVML_RESOLVE(member, function, fallback) optional_or(#function, fallback, f.member);
    STALLSCOPE_NVML_OPTIONAL(STALLSCOPE_NVML_RESOLVE)
#undef STALLSCOPE_NVML_RESOLVE
    // MIG (driver >= 450) and GPM (>= 520, Hopper): their absence is a property of the driver, reported
    // by the collector as "GPM unsupported" rather than as one warning per symbol.
    resolve(h, "nvmlDeviceGetMigMode", f.get_mig_mode);
    resolve(h, "nvmlDeviceGetMaxMigDeviceCount", f.get_max_mig_device_count);
    resolve(h, "nvmlDeviceGetMigDeviceHandleByIndex", f.get_mig_device_handle);
    resolve(h, "nvmlDeviceGetGpuInstanceId", f.get_gpu_instance_id);
    resolve(h, "nvmlDeviceGetComputeInstanceId", f.get_compute_instance_id);
    resolve(h, "nvmlGpmQueryDeviceSupport", f.gpm_query_support);
    resolve(h, "nvmlGpmSampleAlloc", f.gpm_sample_alloc);
    resolve(h, "nvmlGpmSampleFree", f.gpm_sample_free);
    resolve(h, "nvmlGpmSampleGet", f.gpm_sample_get);
    resolve(h, "nvmlGpmMetricsGet", f.gpm_metrics_get);
    resolve(h, "nvmlGpmMigSampleGet", f.gpm_mig_sample_get);

    const nvmlReturn_t rc = f.init();
    if (rc != NVML_SUCCESS) {
        error = "nvmlInit_v2 failed: " + lib->error_string(rc);
        return nullptr;
    }
    lib->initialised_ = true;
    return lib;
}

NvmlLibrary::~NvmlLibrary() {
    if (initialised_ && fn_.shutdown) fn_.shutdown();
    if (handle_) ::dlclose(handle_);
}

std::string NvmlLibrary::error_string(nvmlReturn_t rc) const {
    if (fn_.error_string) {
        if (const char* text = fn_.error_string(rc)) return text;
    }
    return "NVML error " + std::to_string(static_cast<int>(rc));
}

}  // namespace stallscope
