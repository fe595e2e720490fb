#include "libstallscope/model/snapshot_json_text.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/model/snapshot_json_text_writer.h"

namespace stallscope {
namespace {

using json_text::TextWriter;

template <fields::Described T>
void write_object(TextWriter& w, const T& object);

// A described struct's members, as object_json (snapshot_json.cc) puts them: same keys, same order, the
// same JSON type per C++ type (TextWriter::value), optional parts only when present.
template <fields::Described T>
void write_members(TextWriter& w, const T& object) {
    fields::for_each_field<T>([&](const auto& f) {
        const auto& v = fields::member_of(f, object);
        using V = std::remove_cvref_t<decltype(v)>;
        if constexpr (fields::Described<V>) {
            w.key(f.key);
            write_object(w, v);
        } else if constexpr (fields::is_optional_part<V>) {
            if (!v) return;
            w.key(f.key);
            if constexpr (fields::Described<typename V::value_type>) {
                write_object(w, *v);
            } else {
                w.open_array();
                for (const auto& item : *v) {
                    w.separator();
                    write_object(w, item);
                }
                w.close_array();
            }
        } else {
            w.member(f.key, v);
        }
    });
}

template <fields::Described T>
void write_object(TextWriter& w, const T& object) {
    w.open_object();
    write_members(w, object);
    w.close_object();
}

void write_context(TextWriter& w, const JobContext& c, const Json* more) {
    w.open_object();
    write_members(w, c);
    if (more && more->is_object())
        for (const auto& [name, v] : more->get_ref<const Json::object_t&>()) {
            w.data_key(name);
            w.value(v);
        }
    w.close_object();
}

void write_interface(TextWriter& w, const NetInterface& i) {
    write_object(w, i);
}
void write_rdma_port(TextWriter& w, const RdmaPort& p) {
    write_object(w, p);
}
void write_gpu(TextWriter& w, const Gpu& g) {
    write_object(w, g);
}
void write_xid_event(TextWriter& w, const XidEvent& e) {
    write_object(w, e);
}

template <typename T>
void write_array(TextWriter& w, const std::vector<T>& items, void (*write_one)(TextWriter&, const T&)) {
    w.open_array();
    for (const auto& item : items) {
        w.separator();
        write_one(w, item);
    }
    w.close_array();
}

// to_json(Snapshot)'s members, in its order, with the sample line's additions to context and warnings.
void write_snapshot_members(TextWriter& w, const Snapshot& s, const Json* more_context,
                            std::span<const std::string> more_warnings) {
    w.member("schema", kSnapshotSchema);
    w.key("time");
    w.time_value(s.time);
    w.member("unix_time", s.time);
    w.member("host", s.host);
    w.key("context");
    write_context(w, s.context, more_context);
    w.key("host_stats");
    write_object(w, s.host_stats);
    w.key("interfaces");
    write_array(w, s.interfaces, write_interface);
    w.key("rdma");
    write_array(w, s.rdma, write_rdma_port);
    w.key("gpus");
    write_array(w, s.gpus, write_gpu);
    w.key("xid_events");
    write_array(w, s.xid_events, write_xid_event);
    if (!s.nccl.empty()) w.member("nccl", nccl_to_json(s.nccl));
    if (s.job_cgroup) {
        w.key("job_cgroup");
        write_object(w, *s.job_cgroup);
    }
    w.key("collector_failures");
    w.open_object();
    for (const auto& [name, why] : s.collector_failures) {
        w.data_key(name);
        w.value(why);
    }
    w.close_object();
    w.key("warnings");
    w.open_array();
    for (const auto& list : {std::span<const std::string>(s.warnings), more_warnings})
        for (const auto& warning : list) {
            w.separator();
            w.value(warning);
        }
    w.close_array();
}

// A delta as delta_table writes it: the rate alone, or the whole record when it reset or wrapped.
void write_delta_table(TextWriter& w, const DeltaTable& t) {
    w.open_object();
    for (const auto& [entity, row] : t) {
        w.data_key(entity);
        w.open_object();
        for (const auto& [name, d] : row) {
            w.data_key(name);
            if (!d.reset && !d.wrapped) {
                w.value(d.per_second);
                continue;
            }
            w.open_object();
            w.member("per_second", d.per_second);
            w.member("delta", d.delta);
            w.member("reset", d.reset);
            w.member("wrapped", d.wrapped);
            w.close_object();
        }
        w.close_object();
    }
    w.close_object();
}

void write_rates(TextWriter& w, const Rates& r) {
    w.open_object();
    w.member("interval_seconds", r.interval_seconds);
    w.key("host");
    write_delta_table(w, r.host);
    w.key("interfaces");
    write_delta_table(w, r.interfaces);
    w.key("rdma_counters");
    write_delta_table(w, r.rdma_counters);
    w.key("rdma_hw_counters");
    write_delta_table(w, r.rdma_hw_counters);
    w.key("gpus");
    write_delta_table(w, r.gpus);
    w.close_object();
}

// profile_json.cc's number_json: null when not finite, an integer when integral, else 4 decimals.
void write_rounded(TextWriter& w, double v) {
    if (!std::isfinite(v))
        w.null();
    else if (std::floor(v) == v && std::fabs(v) < 9.0e15)
        w.value(static_cast<std::int64_t>(v));
    else
        w.value(std::round(v * 10000.0) / 10000.0);
}

void write_reason(TextWriter& w, const Reason& r) {
    w.open_object();
    w.member("code", r.code);
    w.member("category", r.category);
    w.member("severity", r.severity);
    w.member("label", r.label);
    w.member("subject", r.subject);
    w.member("message", r.message);
    w.key("evidence");
    w.open_object();
    for (const auto& [name, v] : r.evidence) {
        w.data_key(name);
        if (const double* d = std::get_if<double>(&v))
            write_rounded(w, *d);
        else
            w.value(std::get<std::string>(v));
    }
    w.close_object();
    w.key("first_seen");
    w.time_value(r.first_seen);
    w.close_object();
}

void write_profile(TextWriter& w, const Profile& p) {
    w.open_object();
    w.member("label", p.label);
    w.key("confidence");
    write_rounded(w, p.confidence);
    w.key("reasons");
    write_array(w, p.reasons, write_reason);
    w.member("bottleneck_hint", p.bottleneck_hint);
    if (!p.unknown_reason.empty()) w.member("unknown_reason", p.unknown_reason);
    w.close_object();
}

}  // namespace

Json sample_line_to_json(const SampleLine& line) {
    Json out = to_json(line.snapshot);
    if (line.rates) json_fields::put(out, "rates", to_json(*line.rates));
    json_fields::put(out, "profile", to_json(line.profile));
    for (const auto& w : line.more_warnings) out["warnings"].push_back(w);
    if (line.more_context && line.more_context->is_object())
        for (const auto& [name, v] : line.more_context->get_ref<const Json::object_t&>())
            out["context"][name] = v;
    return out;
}

bool append_sample_line_json(std::string& out, const SampleLine& line) {
    TextWriter w(out);
    w.open_object();
    write_snapshot_members(w, line.snapshot, line.more_context, line.more_warnings);
    if (line.rates) {
        w.key("rates");
        write_rates(w, *line.rates);
    }
    w.key("profile");
    write_profile(w, line.profile);
    w.close_object();
    return w.ok();
}

bool append_snapshot_json(std::string& out, const Snapshot& snapshot) {
    TextWriter w(out);
    w.open_object();
    write_snapshot_members(w, snapshot, nullptr, {});
    w.close_object();
    return w.ok();
}

bool append_rates_json(std::string& out, const Rates& rates) {
    TextWriter w(out);
    write_rates(w, rates);
    return w.ok();
}

bool append_profile_json(std::string& out, const Profile& profile) {
    TextWriter w(out);
    write_profile(w, profile);
    return w.ok();
}

}  // namespace stallscope
