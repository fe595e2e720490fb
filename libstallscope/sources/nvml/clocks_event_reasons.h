// NVML clocks-event ("throttle") reason bits -> stable names, shared by the NVML and nvidia-smi paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stallscope {

// Names in bit order: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost,
// sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting; a bit this
// table does not know becomes "unknown_0x<bit>" so a new driver's reason is visible, not dropped.
std::vector<std::string> decode_clocks_event_reasons(std::uint64_t mask);

}  // namespace stallscope
