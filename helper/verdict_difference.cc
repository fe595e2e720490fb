#include "helper/verdict_difference.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "libstallscope/util/printable.h"
#include "stallscope_config.h"

namespace stallscope::cli {
namespace {

std::set<std::string> reason_keys(const Json& verdict) {
    std::set<std::string> out;
    if (!verdict.contains("reasons") || !verdict["reasons"].is_array()) return out;
    for (const auto& r : verdict["reasons"]) {
        if (!r.is_object() || !r.contains("code") || !r["code"].is_string()) continue;
        std::string key = r["code"].get<std::string>();
        if (r.contains("subject") && r["subject"].is_string() && !r["subject"].get<std::string>().empty())
            key += "@" + r["subject"].get<std::string>();
        out.insert(key);
    }
    return out;
}

std::string string_of(const Json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "?";
}

double number_of(const Json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
}

}  // namespace

VerdictDifference verdict_difference(const Json& recorded, const Json& replayed, const Json& header,
                                     bool rules_given) {
    VerdictDifference d;
    d.recorded_label = string_of(recorded, "label");
    d.replayed_label = string_of(replayed, "label");
    d.recorded_confidence = number_of(recorded, "confidence");
    d.replayed_confidence = number_of(replayed, "confidence");
    if (header.is_object() && header.contains("stallscope_version") &&
        header["stallscope_version"].is_string())
        d.recorded_version = header["stallscope_version"].get<std::string>();
    const auto before = reason_keys(recorded), after = reason_keys(replayed);
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(d.reasons_added));
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                        std::back_inserter(d.reasons_removed));
    // "reasons" among the other fields only when the same reasons differ in text, evidence or share.
    const bool reasons_named = !d.reasons_added.empty() || !d.reasons_removed.empty();
    for (const auto& [key, value] : replayed.items()) {
        if (key == "label" || key == "confidence" || (key == "reasons" && reasons_named)) continue;
        if (!recorded.contains(key))
            d.fields_new.push_back(key);
        else if (recorded[key] != value)
            d.fields_changed.push_back(key);
    }
    for (const auto& [key, value] : recorded.items())
        if (key != "type" && !replayed.contains(key)) d.fields_changed.push_back(key);
    d.thresholds = rules_given                                           ? "rules"
                   : header.is_object() && header.contains("thresholds") ? "recorded"
                                                                         : "defaults";
    return d;
}

std::string verdict_difference_text(const VerdictDifference& d) {
    char line[320];
    std::snprintf(
        line, sizeof line, "  differs from the recorded verdict: recorded %s %.2f, replayed %s %.2f\n",
        d.recorded_label.c_str(), d.recorded_confidence, d.replayed_label.c_str(), d.replayed_confidence);
    std::string out = line;
    if (!d.reasons_added.empty()) out += "    reasons only in the replay: " + joined(d.reasons_added) + "\n";
    if (!d.reasons_removed.empty())
        out += "    reasons only in the recording: " + joined(d.reasons_removed) + "\n";
    if (!d.fields_changed.empty()) out += "    also differ: " + joined(d.fields_changed) + "\n";
    if (!d.fields_new.empty())
        out += "    not in the recording (added to verdicts since): " + joined(d.fields_new) + "\n";
    const std::string recorded_by =
        d.recorded_version.empty() ? "an unversioned stallscope" : "stallscope " + d.recorded_version;
    out += "    recorded by " + recorded_by + ", replayed by " + STALLSCOPE_VERSION;
    if (d.thresholds == "rules")
        out += " with --rules FILE\n    instead of the thresholds the helper used\n";
    else if (d.thresholds == "recorded")
        out += " with the thresholds recorded\n    in the timeline: the rules changed since the recording\n";
    else
        out +=
            " with today's default\n    thresholds (the timeline records none): the rules or their defaults "
            "changed since the recording\n";
    return out;
}

Json verdict_difference_json(const VerdictDifference& d) {
    return Json{{"recorded_label", d.recorded_label},
                {"recorded_confidence", d.recorded_confidence},
                {"recorded_version", d.recorded_version.empty() ? Json(nullptr) : Json(d.recorded_version)},
                {"reasons_added", d.reasons_added},
                {"reasons_removed", d.reasons_removed},
                {"fields_changed", d.fields_changed},
                {"fields_new", d.fields_new},
                {"thresholds", d.thresholds}};
}

}  // namespace stallscope::cli
