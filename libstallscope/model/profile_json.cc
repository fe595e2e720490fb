// Profile, Reason and StepVerdict as JSON; part of snapshot_json.h's interface.
#include <cmath>
#include <limits>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {
namespace {

// Rounds to 4 decimals so evidence reads "12.5", not "12.499999999999998"; integral values as integers.
Json number_json(double v) {
    if (!std::isfinite(v)) return nullptr;
    if (std::floor(v) == v && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
    return std::round(v * 10000.0) / 10000.0;
}

}  // namespace

Json evidence_to_json(const Evidence& evidence) {
    Json o = Json::object();
    for (const auto& [key, value] : evidence) {
        if (const double* d = std::get_if<double>(&value))
            o[key] = number_json(*d);
        else
            o[key] = std::get<std::string>(value);
    }
    return o;
}

Json to_json(const Reason& r) {
    Json o{{"code", r.code},
           {"category", r.category},
           {"severity", r.severity},
           {"label", r.label},
           {"subject", r.subject},
           {"message", r.message},
           {"evidence", evidence_to_json(r.evidence)}};
    o["first_seen"] = format_rfc3339(r.first_seen);
    return o;
}

Json to_json(const Profile& p) {
    Json o{{"label", p.label}, {"confidence", number_json(p.confidence)}, {"reasons", Json::array()}};
    for (const auto& r : p.reasons) o["reasons"].push_back(to_json(r));
    o["bottleneck_hint"] = p.bottleneck_hint;
    if (!p.unknown_reason.empty()) o["unknown_reason"] = p.unknown_reason;
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
