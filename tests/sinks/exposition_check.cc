#include "exposition_check.h"

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

namespace stallscope::test {

namespace {

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");

bool parse_value(const std::string& text, double& out) {
    if (text == "NaN" || text == "+Inf" || text == "-Inf") return true;
    if (text.empty()) return false;
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size();
}

// Parses `{a="x",b="y"}` starting at text[pos] == '{'; pos ends after '}'.
bool parse_labels(const std::string& text, std::size_t& pos, std::map<std::string, std::string>& labels,
                  std::string& error) {
    ++pos;
    while (pos < text.size() && text[pos] != '}') {
        std::size_t eq = text.find('=', pos);
        if (eq == std::string::npos) return error = "label without '='", false;
        std::string name = text.substr(pos, eq - pos);
        if (!std::regex_match(name, kLabelName)) return error = "bad label name '" + name + "'", false;
        pos = eq + 1;
        if (pos >= text.size() || text[pos] != '"') return error = "label value not quoted", false;
        ++pos;
        std::string value;
        for (;;) {
            if (pos >= text.size()) return error = "unterminated label value", false;
            char c = text[pos++];
            if (c == '"') break;
            if (c == '\n') return error = "raw newline in label value", false;
            if (c == '\\') {
                if (pos >= text.size()) return error = "dangling backslash", false;
                char e = text[pos++];
                if (e == '\\')
                    value += '\\';
                else if (e == '"')
                    value += '"';
                else if (e == 'n')
                    value += '\n';
                else
                    return error = std::string("bad escape \\") + e, false;
            } else {
                value += c;
            }
        }
        if (!labels.emplace(name, value).second) return error = "duplicate label " + name, false;
        if (pos < text.size() && text[pos] == ',') ++pos;
    }
    if (pos >= text.size()) return error = "unterminated label set", false;
    ++pos;
    return true;
}

}  // namespace

std::vector<const ParsedSample*> ParsedExposition::find(
    const std::string& name, const std::map<std::string, std::string>& labels) const {
    std::vector<const ParsedSample*> out;
    for (const ParsedSample& s : samples) {
        if (s.name != name) continue;
        bool match = true;
        for (const auto& [k, v] : labels) {
            auto it = s.labels.find(k);
            match = match && it != s.labels.end() && it->second == v;
        }
        if (match) out.push_back(&s);
    }
    return out;
}

ParsedExposition parse_exposition(const std::string& text) {
    ParsedExposition out;
    std::set<std::string> finished_families, series;
    std::map<std::string, bool> has_help;
    std::string current;  // family the following samples belong to
    std::istringstream in(text);
    std::string line;
    int number = 0;
    auto fail = [&](const std::string& why) {
        out.errors.push_back("line " + std::to_string(number) + ": " + why + ": " + line);
    };
    if (!text.empty() && text.back() != '\n') out.errors.push_back("document does not end with a newline");
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
            std::istringstream fields(line.substr(7));
            std::string name, rest;
            fields >> name;
            std::getline(fields, rest);
            if (!std::regex_match(name, kMetricName)) fail("bad family name");
            if (name != current) {
                if (!current.empty()) finished_families.insert(current);
                if (finished_families.count(name) != 0) fail("family appears twice");
                current = name;
            }
            if (line[2] == 'H') {
                if (has_help[name]) fail("second HELP");
                has_help[name] = true;
            } else {
                if (out.types.count(name) != 0) fail("second TYPE");
                std::string type = rest.empty() ? "" : rest.substr(1);
                if (type != "gauge" && type != "counter") fail("unexpected type");
                if (type == "counter" && !name.ends_with("_total")) fail("counter without _total");
                out.types[name] = type;
            }
            continue;
        }
        if (line[0] == '#') continue;
        ParsedSample s;
        std::size_t pos = line.find_first_of("{ ");
        if (pos == std::string::npos) {
            fail("sample without value");
            continue;
        }
        s.name = line.substr(0, pos);
        if (!std::regex_match(s.name, kMetricName)) fail("bad metric name");
        if (s.name != current || out.types.count(s.name) == 0 || !has_help[s.name]) {
            fail("sample outside its family's HELP/TYPE block");
        }
        std::string error;
        if (line[pos] == '{' && !parse_labels(line, pos, s.labels, error)) {
            fail(error);
            continue;
        }
        if (pos >= line.size() || line[pos] != ' ') {
            fail("no space before value");
            continue;
        }
        std::string value = line.substr(pos + 1);
        if (value.find(' ') != std::string::npos)
            fail("timestamp or trailing text (textfile forbids timestamps)");
        if (!parse_value(value, s.value)) fail("bad value");
        std::string id = s.name;
        for (const auto& [k, v] : s.labels) id += "|" + k + "=" + v;
        if (!series.insert(id).second) fail("duplicate series");
        out.samples.push_back(std::move(s));
    }
    return out;
}

}  // namespace stallscope::test
