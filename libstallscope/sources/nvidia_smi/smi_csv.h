// Parser for `nvidia-smi --query-gpu=<kSmiQueryFields> --format=csv,noheader,nounits` (pure: text in,
// GPUs and warnings out). The fallback when NVML cannot be loaded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// Column order the parser expects. Drivers before 535 call the event-reasons column
// clocks_throttle_reasons.active (kSmiQueryFieldsLegacy); the values are the same bit mask.
inline constexpr const char* kSmiQueryFields =
    "index,uuid,pci.bus_id,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,"
    "power.limit,clocks.sm,clocks.max.sm,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total";
inline constexpr const char* kSmiQueryFieldsLegacy =
    "index,uuid,pci.bus_id,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,"
    "power.limit,clocks.sm,clocks.max.sm,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile."
    "total";

struct SmiParseResult {
    std::vector<Gpu> gpus;  // vendor "nvidia", one per well-formed row
    // One per unusable row or value, naming the GPU and the column: "nvidia-smi: GPU 3: power_w
    // '[Not Supported]' -> null". Stable text, so the caller can show each one once per run.
    std::vector<std::string> warnings;
};

// "[N/A]", "N/A", "[Not Supported]" and any other "[...]" marker are null values; memory columns are
// MiB (-> bytes); the event-reasons column is a hex mask. A row with the wrong column count or an
// unparsable index/uuid is dropped with a warning; a bad value is null with a warning.
SmiParseResult parse_nvidia_smi_csv(std::string_view text);

}  // namespace stallscope
