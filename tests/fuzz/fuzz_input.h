// Shared by the libFuzzer targets: the fuzzer's bytes as text, and a check that aborts (a finding) when a
// parser breaks its documented contract rather than merely crashing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <unistd.h>

namespace stallscope::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// A per-process scratch file under /tmp, "/tmp/<stem>.<pid><suffix>", the pid padded to 10 digits: the
// same length in every process, so the fixed-seed CI runs (run.sh --ci) cover the same string code
// whatever the pid (a 5-digit pid against a 7-digit one took other branches of the path's handling).
inline std::string scratch_path(const char* stem, const char* suffix) {
    char pid[16];
    std::snprintf(pid, sizeof pid, "%010d", static_cast<int>(::getpid()));
    return std::string("/tmp/") + stem + "." + pid + suffix;
}

// Like assert(), but also in release builds: libFuzzer reports the abort with the input that caused it.
#define FUZZ_CHECK(condition)                                                                     \
    do {                                                                                          \
        if (!(condition)) {                                                                       \
            std::fprintf(stderr, "%s:%d: contract broken: %s\n", __FILE__, __LINE__, #condition); \
            std::abort();                                                                         \
        }                                                                                         \
    } while (0)

}  // namespace stallscope::fuzz
