#include "helper/output_sinks.h"

#include <algorithm>
#include <cstdint>

#include "libstallscope/sinks/prometheus_textfile.h"
#include "stallscope_config.h"
#if STALLSCOPE_HAVE_CURL
#include "libstallscope/sinks/alertmanager.h"
#include "libstallscope/util/parse_number.h"
#endif

namespace stallscope::cli {
namespace {

// The sinks' messages carry their own "stallscope: " prefix; ours are printed behind one already.
// Only the Alertmanager sink's messages need it: unused in a build without libcurl (-Dalertmanager=disabled,
// as the Slurm matrix builds), where -Wunused-function would say so.
[[maybe_unused]] std::string without_prefix(std::string message) {
    if (message.rfind("stallscope: ", 0) == 0) message.erase(0, 12);
    return message;
}

}  // namespace

struct OutputSinks::Impl {
    std::unique_ptr<PrometheusTextfile> textfile;
    bool remove_textfile = false;
    std::string textfile_problem, alerts_problem;  // the last reported, "" while working
    std::uint64_t alerts_failed = 0, alerts_posted = 0;
#if STALLSCOPE_HAVE_CURL
    std::unique_ptr<AlertmanagerSink> alerts;
#endif
};

OutputSinks::OutputSinks(const ParsedArgs& args, bool remove_textfile_at_exit)
    : impl_(std::make_unique<Impl>()) {
    impl_->remove_textfile = remove_textfile_at_exit;
    if (auto path = args.value("prometheus-textfile")) {
        if (path->empty()) throw UsageError("--prometheus-textfile needs a file path");
        PrometheusTextfileOptions options;
        // The per-step helper may sample every second; a textfile is scraped every 15-60 s, so the helper
        // rewrites it at most every 10 s (most of its CPU budget otherwise). The CLI writes every sample.
        if (remove_textfile_at_exit) options.min_interval_seconds = 10;
        impl_->textfile = std::make_unique<PrometheusTextfile>(*path, Labels{}, options);
    }
    if (auto url = args.value("alert-webhook-url")) {
#if STALLSCOPE_HAVE_CURL
        std::string error;
        AlertmanagerOptions options;
        // Prometheus semantics (issue 39): endsAt 4 resends ahead, refreshed while the fault lasts. The
        // per-step helper resolves its alerts when its step ends (the job is gone); the CLI lets them lapse
        // at endsAt, since a monitor that stops or restarts has not seen the fault clear.
        options.resolve_on_close = remove_textfile_at_exit;
        if (auto interval = args.value("interval-seconds"))
            options.resend_interval_seconds = resend_interval_for(parse_double(*interval).value_or(0));
        impl_->alerts = AlertmanagerSink::create(*url, Labels{}, std::move(options), error);
        if (!impl_->alerts) throw UsageError("--alert-webhook-url: " + without_prefix(error));
#else
        throw UsageError("--alert-webhook-url: this build has no libcurl");
#endif
    }
}

OutputSinks::~OutputSinks() {
    close();
}

void OutputSinks::publish(const Snapshot& snapshot, const Profile& profile, const Rates* rates) {
    if (impl_->textfile) {
        std::string error;
        const bool ok = impl_->textfile->write(snapshot, profile, rates, error);
        warn_on_change(impl_->textfile_problem,
                       ok ? std::string() : "prometheus textfile " + impl_->textfile->path() + ": " + error);
    }
#if STALLSCOPE_HAVE_CURL
    if (impl_->alerts) {
        impl_->alerts->update(snapshot, profile);
        // Posts run on the sink's thread: a failure shows up at a later sample (or at close()).
        const auto stats = impl_->alerts->stats();
        // Failing while new posts fail; working again once one gets through.
        std::string problem = impl_->alerts_problem;
        if (stats.failed + stats.dropped > impl_->alerts_failed)
            problem = "alertmanager " + impl_->alerts->url() +
                      ": posts failing (last error: " + without_prefix(impl_->alerts->last_error()) + ")";
        else if (stats.posted > impl_->alerts_posted)
            problem.clear();
        impl_->alerts_failed = stats.failed + stats.dropped, impl_->alerts_posted = stats.posted;
        warn_on_change(impl_->alerts_problem, problem);
    }
#endif
}

void OutputSinks::warn_on_change(std::string& last, const std::string& message) {
    // "after 3 ms" and "after 4 ms" are the same failure: numbers do not make a message new.
    auto shape = [](std::string text) {
        text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }),
                   text.end());
        return text;
    };
    if (!message.empty() && shape(message) != shape(last)) warnings_.push_back(message);
    last = message;
}

std::vector<std::string> OutputSinks::take_new_warnings() {
    std::vector<std::string> out(warnings_.begin() + static_cast<std::ptrdiff_t>(handed_out_),
                                 warnings_.end());
    handed_out_ = warnings_.size();
    return out;
}

void OutputSinks::close() {
    if (!impl_) return;
    if (impl_->textfile && impl_->remove_textfile) impl_->textfile->remove();
    impl_->textfile.reset();
#if STALLSCOPE_HAVE_CURL
    if (impl_->alerts) {
        impl_->alerts->close();
        const auto stats = impl_->alerts->stats();
        if (stats.failed || stats.dropped)
            warnings_.push_back("alertmanager " + impl_->alerts->url() + ": " + std::to_string(stats.failed) +
                                " posts failed, " + std::to_string(stats.dropped) +
                                " dropped (last error: " + without_prefix(impl_->alerts->last_error()) + ")");
        impl_->alerts.reset();
    }
#endif
}

}  // namespace stallscope::cli
