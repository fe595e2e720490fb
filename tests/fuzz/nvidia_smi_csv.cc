// nvidia-smi --format=csv,noheader,nounits output (the NVML fallback).
#include "libstallscope/sources/nvidia_smi/smi_csv.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto result = parse_nvidia_smi_csv(fuzz::as_text(data, size));
    for (const auto& gpu : result.gpus) {
        FUZZ_CHECK(gpu.index >= 0 && gpu.index <= 1023);
        FUZZ_CHECK(!gpu.uuid.empty());
        FUZZ_CHECK(!gpu.power_w || *gpu.power_w >= 0);
    }
    return 0;
}
