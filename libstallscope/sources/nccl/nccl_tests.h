// nccl-tests `all_reduce_perf` (NVIDIA/nccl-tests, ROCm rccl-tests): run it bounded, parse its stdout
// table + `# Avg bus bandwidth` footer or its `-J` JSON file, map the exit code (research notes 4.2-4.3).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/nccl.h"

namespace stallscope::nccl {

// The stdout table. outcome stays "" when the text looked valid; "garbage" when no row and no footer.
NcclTestResult parse_nccl_tests_output(std::string_view text);
// The -J JSON file (versions 1-3; booleans are strings, "nan" doubles are strings).
NcclTestResult parse_nccl_tests_json(std::string_view text);

// testResult_t exit codes: 0 ok, 1 internal, 2 CUDA, 3 NCCL, 4 timeout (-T), 5 not implemented,
// 6 invalid usage, 7 wrong data or busbw below NCCL_TESTS_MIN_BW.
const char* nccl_tests_exit_outcome(int exit_code);

// Default sizes: 32 MiB .. 256 MiB, validation on, so #wrong is meaningful; about a minute on 8 GPUs.
std::vector<std::string> default_nccl_test_args();
// Whitespace-separated user arguments (no shell, no quoting).
std::vector<std::string> split_args(std::string_view text);

// Runs `program args...` (looked up on PATH unless it contains '/'; fork/exec, no shell), killed at
// `timeout`, stdout capped; the result has outcome, exit code, busbw and #wrong.
NcclTestResult run_nccl_test(const std::string& program, const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout);

}  // namespace stallscope::nccl
