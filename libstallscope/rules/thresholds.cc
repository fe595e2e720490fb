#include "libstallscope/rules/thresholds.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "libstallscope/util/parse_number.h"

namespace stallscope {
namespace {

constexpr double kUnbounded = 1e300;  // a key's `max` when it has none

// The keys in thresholds.def's order: the loader, thresholds_as_pairs and the documented config file
// follow it.
constexpr std::array kKeys = {
#define STALLSCOPE_THRESHOLD(key, value, min, max) ThresholdKey{#key, &Thresholds::key, min, max},
#include "libstallscope/rules/thresholds.def"
#undef STALLSCOPE_THRESHOLD
};

std::string range_text(const ThresholdKey& k) {
    std::ostringstream out;
    out << "a number in [" << k.min << ", ";
    if (k.max >= kUnbounded)
        out << "inf)";
    else
        out << k.max << "]";
    return out.str();
}

}  // namespace

std::span<const ThresholdKey> threshold_keys() {
    return kKeys;
}

std::optional<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                           std::string& error) {
    Thresholds t;
    std::set<std::string> seen;
    std::istringstream in(text);
    std::string raw;
    int line_no = 0;
    auto fail = [&](const std::string& why) {
        error = origin + ":" + std::to_string(line_no) + ": " + why;
        return std::nullopt;
    };
    while (std::getline(in, raw)) {
        ++line_no;
        std::string_view line = raw;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        const auto eq = line.find('=');
        if (eq == std::string_view::npos)
            return fail("expected `key = value`, got '" + std::string(line) + "'");
        const std::string key(trim(line.substr(0, eq)));
        const std::string value(trim(line.substr(eq + 1)));
        const ThresholdKey* known = nullptr;
        for (const auto& k : kKeys)
            if (key == k.name) known = &k;
        if (!known) return fail("unknown key '" + key + "'");
        if (!seen.insert(key).second) return fail("key '" + key + "' given twice");
        const auto number = parse_double(value);
        if (!number || *number < known->min || *number > known->max)
            return fail("bad value '" + value + "' for " + key + " (expected " + range_text(*known) + ")");
        t.*(known->member) = *number;
    }
    return t;
}

std::optional<Thresholds> load_thresholds(const std::string& path, std::string& error) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        error = path + ": cannot open: " + std::strerror(errno);
        return std::nullopt;
    }
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) {
        error = path + ": read error";
        return std::nullopt;
    }
    return parse_thresholds(text.str(), path, error);
}

std::vector<std::pair<std::string, double>> thresholds_as_pairs(const Thresholds& t) {
    std::vector<std::pair<std::string, double>> pairs;
    pairs.reserve(kKeys.size());
    for (const auto& k : kKeys) pairs.emplace_back(k.name, t.*(k.member));
    return pairs;
}

}  // namespace stallscope
