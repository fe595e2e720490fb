// An independent reader of the Prometheus text format (0.0.4) for the tests: strict where node_exporter
// is strict, and stricter where promtool lints (families contiguous, counters end in _total).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace stallscope::test {

struct ParsedSample {
    std::string name;
    std::map<std::string, std::string> labels;  // unescaped values
    double value = 0;
};

struct ParsedExposition {
    std::vector<ParsedSample> samples;
    std::map<std::string, std::string> types;  // family -> gauge | counter
    std::vector<std::string> errors;           // empty when the document is valid

    // Samples of `name` whose labels include every given pair.
    std::vector<const ParsedSample*> find(const std::string& name,
                                          const std::map<std::string, std::string>& labels = {}) const;
};

ParsedExposition parse_exposition(const std::string& text);

}  // namespace stallscope::test
