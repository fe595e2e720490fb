// Tiny command-line parser shared by the subcommands: `--name value`, `--name=value`, flags, positionals.
// Usage errors are exceptions caught in main(), printed as one line, exit code 2 (ARCHITECTURE.md).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace stallscope::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ParsedArgs {
    std::map<std::string, std::string> values;  // options that take a value
    std::set<std::string> flags;                // options without a value
    std::vector<std::string> positional;

    bool has(const std::string& name) const { return flags.count(name) || values.count(name); }
    std::optional<std::string> value(const std::string& name) const;
};

// `with_value` / `without_value` list the options (without leading dashes) this subcommand accepts.
ParsedArgs parse_args(int argc, char** argv, int first, const std::set<std::string>& with_value,
                      const std::set<std::string>& without_value);

// Seconds as a positive decimal ("30", "0.5", "0.01"); UsageError naming the option otherwise.
double parse_seconds(const std::string& option, const std::string& text, double min, double max);
long parse_count(const std::string& option, const std::string& text);

// The page written by `report`, `html` and `compare`: `-o FILE`, `--output FILE` and `--html FILE` are
// one option under three names (each command used to take only some). Empty when none is given;
// UsageError for an empty FILE or two different ones.
inline const std::set<std::string> kOutputFileOptions = {"o", "output", "html"};
std::optional<std::string> output_file_option(const ParsedArgs& args);

}  // namespace stallscope::cli
