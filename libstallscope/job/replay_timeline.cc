#include "libstallscope/job/replay_timeline.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "libstallscope/rules/profiler.h"

namespace stallscope {
namespace {

class ReplayVisitor final : public TimelineVisitor {
  public:
    ReplayVisitor(const std::string& path, const std::optional<Thresholds>& override_thresholds,
                  bool progress, ReplayResult& out, const SampleObserver& observer)
        : path_(path), override_(override_thresholds), progress_(progress), out_(out), observer_(observer) {}

    void header(const Json& h) override { out_.header = h; }
    void verdict(const Json& v) override { out_.recorded_verdict = v; }
    // Neither sample is kept by the profiler (it keeps their counters for the rates): an owned one lives
    // here until the observer saw it, a lent one (v2 reader) is not copied at all.
    void sample(Snapshot&& snapshot) override { take(snapshot); }
    void sample_view(const Snapshot& snapshot) override { take(snapshot); }
    void sample_lent(const Snapshot& snapshot, SnapshotShape shape) override { take(snapshot, shape); }

    void take(const Snapshot& snapshot, SnapshotShape shape = {}) {
        if (!profiler_) profiler_ = std::make_unique<Profiler>(choose_thresholds());
        if (!out_.first_sample) out_.first_sample = snapshot;
        profiler_->observe_view_for_verdict(snapshot, shape);  // the step verdict, not each Profile
        if (observer_) observer_(snapshot, profiler_->last_rates());
        if (++out_.samples % 100000 == 0 && progress_)
            std::fprintf(stderr, "\r%s: %zu samples", path_.c_str(), out_.samples);
    }
    StepVerdict finish() {
        if (progress_ && out_.samples >= 100000) std::fprintf(stderr, "\n");
        if (!profiler_) profiler_ = std::make_unique<Profiler>(choose_thresholds());
        return profiler_->verdict();
    }

  private:
    // The header precedes the samples, so by the first sample we know which thresholds were recorded.
    Thresholds choose_thresholds() {
        if (override_) return *override_;
        std::string error;
        if (auto recorded = thresholds_from_header(out_.header, error)) return *recorded;
        if (!error.empty())
            out_.warnings.push_back(path_ + ": header thresholds unusable (" + error + "), using defaults");
        return Thresholds{};
    }

    const std::string& path_;
    const std::optional<Thresholds>& override_;
    const bool progress_;
    ReplayResult& out_;
    const SampleObserver& observer_;
    std::unique_ptr<Profiler> profiler_;
};

}  // namespace

std::optional<Thresholds> thresholds_from_header(const Json& header, std::string& error) {
    if (!header.is_object() || !header.contains("thresholds") || !header["thresholds"].is_object())
        return std::nullopt;
    std::string text;
    for (auto& [key, value] : header["thresholds"].items())
        if (value.is_number()) text += key + " = " + value.dump() + "\n";
    return parse_thresholds(text, "timeline header", error);
}

bool replay_timeline(const std::string& path, const std::optional<Thresholds>& override_thresholds,
                     bool progress, ReplayResult& out, std::string& error, const SampleObserver& observer,
                     std::atomic<std::uint64_t>* progress_bytes) {
    ReplayVisitor visitor(path, override_thresholds, progress && ::isatty(STDERR_FILENO), out, observer);
    TimelineReadLimits limits;
    limits.progress_bytes = progress_bytes;
    if (!visit_timeline(path, visitor, out.warnings, error, limits)) return false;
    out.verdict = visitor.finish();
    if (out.recorded_verdict.is_object()) {
        Json recorded = out.recorded_verdict;
        recorded.erase("type");
        // As the helper wrote it (replace): a subject or message that is not UTF-8 compares, not throws.
        const auto text = [](const Json& j) {
            return j.dump(-1, ' ', false, Json::error_handler_t::replace);
        };
        out.matches_recorded = text(recorded) == text(to_json(out.verdict));
    }
    return true;
}

}  // namespace stallscope
