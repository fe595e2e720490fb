#include "helper/cli_args.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "libstallscope/util/parse_number.h"

namespace stallscope::cli {
namespace {

// Edits (insert, delete, replace) from a to b, stopping early past `limit`.
std::size_t edit_distance(const std::string& a, const std::string& b, std::size_t limit) {
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// " (did you mean --output?)" for `--out`, `--jsno`; "" when no accepted option is close. A name the
// typed one starts (or that starts it) counts as close; so does one or two letters off a longer name.
std::string suggestion(const std::string& typed, const std::set<std::string>& with_value,
                       const std::set<std::string>& without_value) {
    std::string best;
    std::size_t best_distance = 3;
    for (const auto* names : {&with_value, &without_value})
        for (const std::string& name : *names) {
            if (name.size() < 2) continue;  // -o and the like: suggest the long form
            std::size_t d = edit_distance(typed, name, 2);
            if (typed.size() >= 3 && (name.starts_with(typed) || typed.starts_with(name)))
                d = std::min<std::size_t>(d, 1);
            if (typed.size() < 4 && d == 2) continue;  // two edits of a short word: anything
            if (d < best_distance) best_distance = d, best = name;
        }
    return best.empty() ? "" : " (did you mean --" + best + "?)";
}

}  // namespace

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
            throw UsageError("unknown option '" + arg + "'" + suggestion(name, with_value, without_value));
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

std::optional<std::string> output_file_option(const ParsedArgs& args) {
    std::optional<std::string> file;
    for (const char* name : {"o", "output", "html"}) {
        const auto v = args.value(name);
        if (!v) continue;
        const std::string spelled = std::string(name) == "o" ? "-o" : "--" + std::string(name);
        if (v->empty()) throw UsageError(spelled + " needs a file name");
        if (file && *file != *v) throw UsageError("-o, --output and --html name one file: give it once");
        file = v;
    }
    return file;
}

}  // namespace stallscope::cli
