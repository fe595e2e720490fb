// NVIDIA GPUs through the nvidia-smi CLI, when NVML cannot be loaded. One bounded fork+exec per sample
// (~15 ms, node-health-anchors.md section 9.2): a fallback, not the fast path.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/nvidia_smi/bounded_command.h"

namespace stallscope {

class NvidiaSmiCollector {
  public:
    explicit NvidiaSmiCollector(std::string program,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

    // Runs nvidia-smi once. True when it exited 0 (its output then serves the first sample); false with
    // `why` ("nvidia-smi: No such file or directory", "... exit status 9: NVIDIA-SMI has failed ...").
    bool probe(std::string& why);
    void sample(Snapshot& snapshot);

  private:
    CommandResult run(const char* fields);
    CommandResult run_query();

    std::string program_;
    std::chrono::milliseconds timeout_;
    bool legacy_fields_ = false;  // driver < 535 names the column clocks_throttle_reasons.active
    std::optional<CommandResult> first_;
    std::set<std::string> warned_;
};

}  // namespace stallscope
