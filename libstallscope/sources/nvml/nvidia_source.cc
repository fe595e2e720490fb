// make_nvidia_source: NVML when libnvidia-ml loads, else the nvidia-smi CLI, else no GPUs and one
// warning line per snapshot (so a one-shot run says why it shows no NVIDIA GPUs).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/nvidia_smi/smi_collector.h"
#include "libstallscope/sources/nvml/nvml_collector.h"

namespace stallscope {

namespace {

class NvidiaSource final : public Source {
  public:
    explicit NvidiaSource(const Roots& roots) : roots_(roots) {}
    std::string_view name() const override { return "nvml"; }
    // No driver and no nvidia-smi found: each sample only adds a warning (a GPU-less node).
    bool may_block() const override { return !chosen_ || nvml_ || smi_; }

    void sample(Snapshot& snapshot) override {
        if (!chosen_) choose(snapshot);
        if (nvml_) {
            nvml_->sample(snapshot);
        } else if (smi_) {
            smi_->sample(snapshot);
        } else if (std::none_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                                [](const Gpu& g) { return g.vendor == "amd"; })) {
            // On an AMD node (the amdgpu source runs first) a missing NVML is expected, not news.
            snapshot.warnings.push_back(no_gpu_warning_);
        }
    }

  private:
    // Picks the backend on the first sample (not in the constructor: a missing driver is reported in the
    // snapshot, and the sampler's timing covers a slow nvmlInit).
    void choose(Snapshot& snapshot) {
        chosen_ = true;
        std::string nvml_error;
        if (auto lib = NvmlLibrary::open(roots_.nvml_library, nvml_error)) {
            nvml_ = std::make_unique<NvmlCollector>(std::move(lib));
            return;
        }
        auto smi = std::make_unique<NvidiaSmiCollector>(roots_.nvidia_smi);
        std::string smi_error;
        if (smi->probe(smi_error)) {
            snapshot.warnings.push_back("nvml: " + nvml_error + "; using " + roots_.nvidia_smi +
                                        " instead (one process per sample, fewer fields)");
            smi_ = std::move(smi);
            return;
        }
        no_gpu_warning_ = "nvidia: no NVIDIA GPU telemetry: NVML unavailable (" + nvml_error +
                          ") and nvidia-smi unavailable (" + smi_error + ")";
    }

    Roots roots_;
    bool chosen_ = false;
    std::unique_ptr<NvmlCollector> nvml_;
    std::unique_ptr<NvidiaSmiCollector> smi_;
    std::string no_gpu_warning_;
};

}  // namespace

std::unique_ptr<Source> make_nvidia_source(const Roots& roots) {
    return std::make_unique<NvidiaSource>(roots);
}

}  // namespace stallscope
