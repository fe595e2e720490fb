#include "libstallscope/sources/nvml/clocks_event_reasons.h"

#include <cstdio>

#include "libstallscope/sources/nvml/nvml_abi.h"

namespace stallscope {

namespace {
struct ReasonName {
    std::uint64_t bit;
    const char* name;
};
constexpr ReasonName kReasons[] = {
    {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
};
}  // namespace

std::vector<std::string> decode_clocks_event_reasons(std::uint64_t mask) {
    std::vector<std::string> names;
    for (const auto& reason : kReasons) {
        if (mask & reason.bit) {
            names.emplace_back(reason.name);
            mask &= ~reason.bit;
        }
    }
    for (int bit = 0; bit < 64 && mask; ++bit) {
        const std::uint64_t value = std::uint64_t{1} << bit;
        if (!(mask & value)) continue;
        char name[40];
        std::snprintf(name, sizeof name, "unknown_0x%llx", static_cast<unsigned long long>(value));
        names.emplace_back(name);
        mask &= ~value;
    }
    return names;
}

}  // namespace stallscope
