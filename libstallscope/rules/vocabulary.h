// The words a finding is told in: its label, severity, category and bottleneck hint, as enums inside the
// rules and as strings only where a Reason is written for the model (Findings::add, make_finding) and read
// back from one (from_string). One table per enum below names each value once.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace stallscope {

// In precedence order, so that comparing two labels compares them: FAIL_RISK > SLOW > UNKNOWN > FAST
// (positive evidence beats missing data).
enum class Label : std::uint8_t { kFast, kUnknown, kSlow, kFailRisk };
enum class Severity : std::uint8_t { kInfo, kWarning, kCritical };
enum class Category : std::uint8_t { kGpu, kFabric, kNetwork, kSystem, kProfiler, kTelemetry, kNccl };
// The bottleneck a finding points at; kNone: no opinion.
enum class Hint : std::uint8_t { kNone, kCompute, kNetwork, kMemory, kInput };

namespace vocabulary_detail {

// Indexed by the enum's value.
inline constexpr std::array<std::string_view, 4> kLabelNames = {"FAST", "UNKNOWN", "SLOW", "FAIL_RISK"};
inline constexpr std::array<std::string_view, 3> kSeverityNames = {"info", "warning", "critical"};
inline constexpr std::array<std::string_view, 7> kCategoryNames = {
    "gpu", "fabric", "network", "system", "profiler", "telemetry", "nccl"};
inline constexpr std::array<std::string_view, 5> kHintNames = {"", "compute", "network", "memory", "input"};

template <class Enum, std::size_t N>
constexpr std::optional<Enum> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
    for (std::size_t i = 0; i < N; ++i)
        if (names[i] == text) return static_cast<Enum>(i);
    return std::nullopt;
}

}  // namespace vocabulary_detail

// The names written into a Reason and its JSON: views of string literals, good for the whole run.
constexpr std::string_view to_string(Label v) {
    return vocabulary_detail::kLabelNames[static_cast<std::size_t>(v)];
}
constexpr std::string_view to_string(Severity v) {
    return vocabulary_detail::kSeverityNames[static_cast<std::size_t>(v)];
}
constexpr std::string_view to_string(Category v) {
    return vocabulary_detail::kCategoryNames[static_cast<std::size_t>(v)];
}
constexpr std::string_view to_string(Hint v) {
    return vocabulary_detail::kHintNames[static_cast<std::size_t>(v)];
}

// The value a name stands for; nullopt for a name the table lacks (a file written by another version).
constexpr std::optional<Label> label_from_string(std::string_view text) {
    return vocabulary_detail::find_name<Label>(vocabulary_detail::kLabelNames, text);
}
constexpr std::optional<Severity> severity_from_string(std::string_view text) {
    return vocabulary_detail::find_name<Severity>(vocabulary_detail::kSeverityNames, text);
}
constexpr std::optional<Category> category_from_string(std::string_view text) {
    return vocabulary_detail::find_name<Category>(vocabulary_detail::kCategoryNames, text);
}
constexpr std::optional<Hint> hint_from_string(std::string_view text) {
    return vocabulary_detail::find_name<Hint>(vocabulary_detail::kHintNames, text);
}

// A label's precedence as a number: FAST 0, UNKNOWN 1, SLOW 2, FAIL_RISK 3.
constexpr int label_rank(Label label) {
    return static_cast<int>(label);
}

}  // namespace stallscope
