#include "libstallscope/sinks/prometheus_textfile.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "libstallscope/sinks/prometheus_families.h"
#include "libstallscope/util/atomic_file.h"
#include "stallscope_config.h"

namespace stallscope {

namespace textfile {

std::string_view int_label(char (&buf)[16], long value) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    return {buf, ec == std::errc() ? static_cast<std::size_t>(end - buf) : 0};
}

void select_entities(const Snapshot& s, const Profile& p, Entities& out) {
    using namespace textfile_bound;
    out.dropped = {};
    out.gpus = std::span(s.gpus).first(std::min(s.gpus.size(), kMaxGpus));
    out.dropped.gpus = s.gpus.size() - out.gpus.size();
    out.rdma_ports = std::span(s.rdma).first(std::min(s.rdma.size(), kMaxRdmaPorts));
    out.dropped.rdma_ports = s.rdma.size() - out.rdma_ports.size();
    out.interfaces.clear();
    for (const NetInterface& i : s.interfaces) {
        if (i.name == "lo") continue;
        if (out.interfaces.size() < kMaxInterfaces) {
            out.interfaces.push_back(&i);
        } else {
            ++out.dropped.interfaces;
        }
    }
    out.reasons.clear();
    for (const Reason& r : p.reasons) {
        // One series per label set: a rule firing twice for the same subject is one active reason.
        bool duplicate = std::any_of(out.reasons.begin(), out.reasons.end(), [&r](const Reason* seen) {
            return seen->code == r.code && seen->category == r.category && seen->severity == r.severity &&
                   seen->subject == r.subject;
        });
        if (duplicate) continue;
        if (out.reasons.size() < kMaxReasons) {
            out.reasons.push_back(&r);
        } else {
            ++out.dropped.reasons;
        }
    }
}

void write_core_families(ExpositionWriter& w, const Snapshot& s, const Profile& p, const Rates* rates,
                         const Entities& e) {
    w.family("stallscope_build_info", MetricType::gauge,
             "stallscope version that wrote this file (always 1).");
    w.sample("stallscope_build_info", {{"version", STALLSCOPE_VERSION}}, 1.0);
    w.family("stallscope_sample_timestamp_seconds", MetricType::gauge,
             "Time of the sample this file describes, seconds since the epoch.");
    w.sample("stallscope_sample_timestamp_seconds", {}, s.time);
    if (rates != nullptr) {
        w.family("stallscope_sample_interval_seconds", MetricType::gauge,
                 "Seconds between the last two samples (periodic mode).");
        w.sample("stallscope_sample_interval_seconds", {}, rates->interval_seconds);
    }

    w.family("stallscope_profile_label", MetricType::gauge,
             "Profiler label as a state set: 1 for the current label, 0 for the others.");
    for (const char* label : {kLabelFast, kLabelSlow, kLabelFailRisk, kLabelUnknown}) {
        w.sample("stallscope_profile_label", {{"label", label}}, p.label == label ? 1.0 : 0.0);
    }
    w.family("stallscope_profile_confidence_ratio", MetricType::gauge,
             "Profiler confidence in its label, 0..1.");
    w.sample("stallscope_profile_confidence_ratio", {}, p.confidence);
    w.family("stallscope_profile_bottleneck", MetricType::gauge,
             "Bottleneck hint as a state set: 1 for the current hint, 0 for the others.");
    for (const char* hint : {"compute", "network", "memory", "mixed", "unknown"}) {
        w.sample("stallscope_profile_bottleneck", {{"hint", hint}}, p.bottleneck_hint == hint ? 1.0 : 0.0);
    }
    w.family("stallscope_profile_reasons", MetricType::gauge, "Number of reasons active in this sample.");
    w.sample("stallscope_profile_reasons", {}, static_cast<double>(p.reasons.size()));
    w.family("stallscope_profile_reason_active", MetricType::gauge,
             "1 for each active profiler reason (first 32 distinct), by code, category, severity, subject.");
    for (const Reason* r : e.reasons) {
        w.sample("stallscope_profile_reason_active",
                 {{"code", r->code},
                  {"category", r->category},
                  {"severity", r->severity},
                  {"subject", r->subject}},
                 1.0);
    }
    std::size_t warning = 0, critical = 0;
    for (const Reason& r : p.reasons) {
        if (!is_alerting(r)) continue;
        (r.severity == "critical" ? critical : warning) += 1;
    }
    w.family("stallscope_alerts_active", MetricType::gauge,
             "Active reasons that are alerts (sent to Alertmanager), by severity.");
    w.sample("stallscope_alerts_active", {{"severity", "warning"}}, static_cast<double>(warning));
    w.sample("stallscope_alerts_active", {{"severity", "critical"}}, static_cast<double>(critical));
    w.family("stallscope_warnings", MetricType::gauge,
             "Inputs that were missing, unreadable or garbage in this sample.");
    w.sample("stallscope_warnings", {}, static_cast<double>(s.warnings.size()));
    w.family("stallscope_collector_failures", MetricType::gauge,
             "Collectors that failed or overran their deadline in this sample.");
    w.sample("stallscope_collector_failures", {}, static_cast<double>(s.collector_failures.size()));
    w.family("stallscope_textfile_entities_dropped", MetricType::gauge,
             "Entities left out of this file by the per-node series bound, by kind.");
    const std::pair<const char*, std::size_t> dropped[] = {{"gpu", e.dropped.gpus},
                                                           {"rdma_port", e.dropped.rdma_ports},
                                                           {"interface", e.dropped.interfaces},
                                                           {"reason", e.dropped.reasons}};
    for (const auto& [kind, n] : dropped) {
        w.sample("stallscope_textfile_entities_dropped", {{"kind", kind}}, static_cast<double>(n));
    }
}

}  // namespace textfile

PrometheusTextfile::PrometheusTextfile(std::string path, Labels static_labels,
                                       PrometheusTextfileOptions options)
    : path_(std::move(path)),
      static_labels_(std::move(static_labels)),
      options_(options),
      entities_(std::make_unique<textfile::Entities>()) {}

PrometheusTextfile::~PrometheusTextfile() = default;

void PrometheusTextfile::accumulate_xids(const Snapshot& snapshot) {
    // Count each sample once, even when render() and write() both see it.
    if (snapshot.time <= last_xid_time_) return;
    last_xid_time_ = snapshot.time;
    for (const Gpu& g : snapshot.gpus) {
        if (g.xid.empty()) continue;
        GpuXidTotal& total = xid_totals_[gpu_key(g)];
        total.count += g.xid.size();
        total.last_code = g.xid.back();
    }
}

const std::string& PrometheusTextfile::render(const Snapshot& snapshot, const Profile& profile,
                                              const Rates* rates) {
    accumulate_xids(snapshot);
    textfile::select_entities(snapshot, profile, *entities_);
    writer_.reset(context_labels(static_labels_, snapshot));
    textfile::write_core_families(writer_, snapshot, profile, rates, *entities_);
    textfile::write_gpu_families(writer_, *entities_, xid_totals_);
    textfile::write_network_families(writer_, *entities_);
    textfile::write_rdma_families(writer_, *entities_);
    return writer_.text();
}

bool PrometheusTextfile::write(const Snapshot& snapshot, const Profile& profile, const Rates* rates,
                               std::string& error) {
    if (last_write_time_ >= 0 && snapshot.time >= last_write_time_ &&
        snapshot.time - last_write_time_ < options_.min_interval_seconds) {
        accumulate_xids(snapshot);
        return true;
    }
    const std::string& text = render(snapshot, profile, rates);
    if (!write_file_atomically(path_, text, options_.fsync, error, FileMode::world_readable)) return false;
    last_write_time_ = snapshot.time;
    return true;
}

void PrometheusTextfile::remove() {
    ::unlink(path_.c_str());
    ::unlink(atomic_temp_path(path_).c_str());
}

}  // namespace stallscope
