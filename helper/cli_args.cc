#include "helper/cli_args.h"

#include <cmath>

#include "libstallscope/util/parse_number.h"

namespace stallscope::cli {

std::optional<std::string> ParsedArgs::value(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
}

ParsedArgs parse_args(int argc, char** argv, int first, const std::set<std::string>& with_value,
                      const std::set<std::string>& without_value) {
    ParsedArgs out;
    bool only_positional = false;
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (only_positional || arg.size() < 2 || arg[0] != '-') {
            out.positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            only_positional = true;
            continue;
        }
        std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
        std::optional<std::string> inline_value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inline_value = name.substr(eq + 1);
            name.resize(eq);
        }
        if (with_value.count(name)) {
            if (!inline_value) {
                if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value");
                inline_value = argv[++i];
            }
            out.values[name] = *inline_value;
        } else if (without_value.count(name)) {
            if (inline_value) throw UsageError("option --" + name + " takes no value");
            out.flags.insert(name);
        } else {
            throw UsageError("unknown option '" + arg + "'");
        }
    }
    return out;
}

double parse_seconds(const std::string& option, const std::string& text, double min, double max) {
    auto v = parse_double(text);
    if (!v || *v < min || *v > max)
        throw UsageError("--" + option + " must be a number of seconds between " +
                         std::to_string(min).substr(0, 4) + " and " + std::to_string(static_cast<long>(max)) +
                         ", got '" + text + "'");
    return *v;
}

long parse_count(const std::string& option, const std::string& text) {
    auto v = parse_u64(text);
    if (!v || *v == 0 || *v > 1'000'000'000)
        throw UsageError("--" + option + " must be a positive integer, got '" + text + "'");
    return static_cast<long>(*v);
}

}  // namespace stallscope::cli
