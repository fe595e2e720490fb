#include "spank/option.h"

#include "spank/escape.h"

namespace stallscope::spank {

IntervalChoice parse_interval(const char* optarg, const PluginConfig& config, std::string_view source) {
    IntervalChoice choice;
    if (optarg == nullptr || *optarg == '\0') {
        choice.seconds = config.default_interval;
        return choice;
    }
    std::string_view text(optarg);
    std::string range = std::to_string(config.min_interval) + " and " + std::to_string(config.max_interval);
    std::string head = std::string(source) + "=" + shown(text, 40) + ": ";
    unsigned value = 0;
    if (!parse_uint(text, 0, 4000000000U, &value)) {
        bool negative = text.front() == '-';
        choice.error = head + (negative ? "must be positive" : "not a whole number of seconds") +
                       " (sampling interval between " + range + " s)";
        return choice;
    }
    if (value < config.min_interval || value > config.max_interval) {
        choice.error = head + "sampling interval must be between " + range + " seconds";
        return choice;
    }
    choice.seconds = value;
    return choice;
}

}  // namespace stallscope::spank
