// A std::regex compiled the first time it is used, not while the program starts.
//
// libstdc++ compiles a std::regex through locale facets and dynamic_casts: the 22 patterns of the NCCL
// parsers, built as globals, cost ~2 ms of CPU at every start of the `stallscope` binary (helper,
// epilog, each CLI call), although most runs never read an NCCL log. A LazyRegex global is constant-
// initialised (a pointer and an empty optional); get() compiles once, thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <regex>

namespace stallscope {

class LazyRegex {
  public:
    explicit constexpr LazyRegex(const char* pattern) : pattern_(pattern) {}
    LazyRegex(const LazyRegex&) = delete;
    LazyRegex& operator=(const LazyRegex&) = delete;

    const std::regex& get() const {
        std::call_once(once_, [this] { regex_.emplace(pattern_); });
        return *regex_;
    }

  private:
    const char* pattern_;
    mutable std::once_flag once_;
    mutable std::optional<std::regex> regex_;
};

}  // namespace stallscope
