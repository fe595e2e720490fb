// Validation of `--stallscope[=SECONDS]` and of the STALLSCOPE environment variable (pure).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "spank/config.h"

namespace stallscope::spank {

struct IntervalChoice {
    std::optional<unsigned> seconds;  // set when valid
    std::string error;                // one line, without the "stallscope: " prefix, when invalid
};

// `--stallscope` without a value (optarg null or empty) means default_interval. Otherwise a whole
// number of seconds in [min_interval, max_interval]. `source` names the input in the message
// ("--stallscope", "STALLSCOPE").
IntervalChoice parse_interval(const char* optarg, const PluginConfig& config, std::string_view source);

}  // namespace stallscope::spank
