// Every number the profiler judges by (listed once, with its default, range and why, in thresholds.def).
// The same keys are read from the rules config file (contrib/stallscope-rules.conf documents each one) and
// written into the timeline header, so a replay with the same file reproduces the recorded verdict.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace stallscope {

// Members in thresholds.def's order, each with its default (`double key = default;`).
struct Thresholds {
#define STALLSCOPE_THRESHOLD(key, value, min, max) double key = value;
#include "libstallscope/rules/thresholds.def"
#undef STALLSCOPE_THRESHOLD
};

// One documented key of the config file.
struct ThresholdKey {
    const char* name;
    double Thresholds::*member;
    double min, max;  // accepted range, inclusive
};
std::span<const ThresholdKey> threshold_keys();

// Parses the config file format: `key = value` lines, `#` comments, unknown key or bad value -> error
// message naming file:line. Returns Thresholds with defaults for keys not given.
std::optional<Thresholds> load_thresholds(const std::string& path, std::string& error);
// Same, from text already in memory (`origin` names it in errors).
std::optional<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                           std::string& error);
// Every key with its value, in file order: for the timeline header and --help.
std::vector<std::pair<std::string, double>> thresholds_as_pairs(const Thresholds&);

}  // namespace stallscope
