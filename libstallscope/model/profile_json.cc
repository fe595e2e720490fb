// Profile, Reason and StepVerdict as JSON; part of snapshot_json.h's interface.
#include <cmath>
#include <limits>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {
namespace {

// Keys are appended (json_fields::put), not looked up: each object's keys are unique by construction
// (Evidence is a std::map), and ordered_json's operator[] would scan them on every insert.
using json_fields::put;

// Rounds to 4 decimals so evidence reads "12.5", not "12.499999999999998"; integral values as integers.
Json number_json(double v) {
    if (!std::isfinite(v)) return nullptr;
    if (std::floor(v) == v && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
    return std::round(v * 10000.0) / 10000.0;
}

}  // namespace

Json evidence_to_json(const Evidence& evidence) {
    Json o = json_fields::object_of(evidence.size());
    for (const auto& [key, value] : evidence) {
        if (const double* d = std::get_if<double>(&value))
            put(o, key, number_json(*d));
        else
            put(o, key, std::get<std::string>(value));
    }
    return o;
}

Json to_json(const Reason& r) {
    Json o = json_fields::object_of(8);
    put(o, "code", r.code);
    put(o, "category", r.category);
    put(o, "severity", r.severity);
    put(o, "label", r.label);
    put(o, "subject", r.subject);
    put(o, "message", r.message);
    put(o, "evidence", evidence_to_json(r.evidence));
    put(o, "first_seen", format_rfc3339(r.first_seen));
    return o;
}

Json to_json(const Profile& p) {
    Json reasons = Json::array();
    reasons.get_ref<Json::array_t&>().reserve(p.reasons.size());
    for (const auto& r : p.reasons) reasons.push_back(to_json(r));
    Json o = json_fields::object_of(5);
    put(o, "label", p.label);
    put(o, "confidence", number_json(p.confidence));
    put(o, "reasons", std::move(reasons));
    put(o, "bottleneck_hint", p.bottleneck_hint);
    if (!p.unknown_reason.empty()) put(o, "unknown_reason", p.unknown_reason);
    return o;
}

Json to_json(const StepVerdict& v) {
    Json o{{"label", v.label}, {"confidence", number_json(v.confidence)}, {"reasons", Json::array()}};
    for (const auto& s : v.reasons) {
        Json r = to_json(s.reason);
        if (!s.worst_evidence.empty()) r["worst_evidence"] = evidence_to_json(s.worst_evidence);
        r["last_seen"] = format_rfc3339(s.last_seen);
        r["samples"] = s.samples;
        r["duration_seconds"] = number_json(s.duration_seconds);
        r["share"] = number_json(s.share);
        o["reasons"].push_back(std::move(r));
    }
    o["bottleneck_hint"] = v.bottleneck_hint;
    o["unknown_reasons"] = v.unknown_reasons;
    o["worst_gpu"] = v.worst_gpu;
    o["worst_gpu_uuid"] = v.worst_gpu_uuid;
    o["worst_port"] = v.worst_port;
    o["worst_interface"] = v.worst_interface;
    o["gpus_allocated"] = v.gpus_allocated;
    o["gpus_measured"] = v.gpus_measured;
    o["samples"] = v.samples;
    o["start"] = v.samples ? Json(format_rfc3339(v.start_time)) : Json(nullptr);
    o["end"] = v.samples ? Json(format_rfc3339(v.end_time)) : Json(nullptr);
    o["duration_seconds"] = number_json(v.duration_seconds());
    return o;
}

}  // namespace stallscope
