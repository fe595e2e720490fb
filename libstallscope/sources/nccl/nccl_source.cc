#include "libstallscope/sources/nccl/nccl_source.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <future>
#include <map>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/nccl/inspector.h"
#include "libstallscope/sources/nccl/log_scan.h"
#include "libstallscope/sources/nccl/ras_parse.h"
#include "libstallscope/sources/nccl/tail_file.h"
#include "libstallscope/sources/sampler.h"
#include "libstallscope/util/parse_number.h"
#include "libstallscope/util/stop_signals.h"

namespace stallscope::nccl {
namespace {

constexpr std::size_t kInspectorBacklog = 8u << 20;
constexpr std::size_t kInspectorBytesPerFile = 1u << 20;
constexpr std::size_t kInspectorBytesTotal = 4u << 20;
constexpr std::size_t kInspectorMaxFiles = 512;
constexpr std::size_t kMonitorBytesPerSample = 256u << 10;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

struct PollResult {
    bool ran_status = false;
    RasReply status;
    std::unique_ptr<RasMonitor> monitor;
    std::string monitor_outcome, monitor_detail;
};

NcclRasReport to_report(const RasReply& reply, double now) {
    NcclRasReport r;
    if (reply.outcome == "ok" || !reply.body.empty()) r = parse_ras_report(reply.body);
    if (reply.outcome != "ok") {
        r.outcome = reply.outcome;
        r.detail = reply.detail;
        r.partial = !reply.body.empty();
    } else if (r.outcome == "ok" && r.partial) {
        r.outcome = "truncated";
        r.detail = reply.address + ": STATUS report ends before its Warnings section";
    } else if (r.outcome != "ok") {
        r.detail = reply.address + ": " + r.detail;
    }
    if (r.format.empty()) r.format = reply.json ? "json" : "text";
    r.time = now;
    return r;
}

class NcclSource final : public Source {
  public:
    explicit NcclSource(NcclSourceConfig c) : c_(std::move(c)), logs_(c_.log_globs) {}
    ~NcclSource() override {
        cancel_ = true;  // the worker notices within ~100 ms; the future's destructor waits that long
    }
    std::string_view name() const override { return "nccl"; }

    void sample(Snapshot& snap) override {
        if (ras_enabled(snap)) ras(snap);
        if (!c_.inspector_dir.empty()) inspector(snap);
        if (!logs_.empty()) snap.nccl.log_events = logs_.scan(snap.warnings);
    }

  private:
    // Node 0 polls for the job (one answer covers every rank). Outside any job (a node-acceptance run,
    // the CLI on a workstation) this node is the whole job: it polls its own NCCL processes.
    bool ras_enabled(const Snapshot& snap) const {
        const bool no_job = snap.context.node_id.empty() && snap.context.job_id.empty();
        return c_.ras_mode != "off" && (c_.ras_any_node || snap.context.node_id == "0" || no_job);
    }

    void ras(Snapshot& snap) {
        const double now = snap.time;
        if (first_time_ < 0) first_time_ = now;
        if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
            collect(pending_.get(), snap);
        if (monitor_) {
            int garbage = 0;
            std::string closed;
            auto events = monitor_->drain(kMonitorBytesPerSample, garbage, closed);
            for (auto& e : events) snap.nccl.ras_events.push_back(std::move(e));
            if (garbage)
                snap.warnings.push_back("nccl ras: " + std::to_string(garbage) +
                                        " unreadable MONITOR events");
            if (!closed.empty()) {
                snap.warnings.push_back("nccl ras: MONITOR session ended (" + closed +
                                        "); reconnecting later");
                monitor_.reset();
                next_monitor_ = now + c_.ras_interval_seconds;
            }
        }
        if (pending_.valid()) return;  // a query is still running: never two at once
        // No RAS connection at all during communicator init (NVIDIA/nccl#1669: a query then crashed jobs).
        if (now < first_time_ + c_.ras_start_delay_seconds) return;
        const bool want_status = c_.ras_mode != "monitor" && now >= next_status_;
        const bool want_monitor = (c_.ras_mode == "auto" || c_.ras_mode == "monitor") && monitor_supported_ &&
                                  !monitor_ && now >= next_monitor_ && (version_ == 0 || version_ >= 22900);
        if (!want_status && !want_monitor) return;
        if (want_status) next_status_ = now + c_.ras_interval_seconds * status_interval_factor(version_);
        if (want_monitor) next_monitor_ = now + c_.ras_interval_seconds;
        const RasEndpoint ep = c_.endpoint;
        const RasLimits lim = c_.limits;
        const RasQuery q{c_.ras_timeout_seconds, true, false};
        const StopSignalsBlockedForNewThreads stop_signals_to_the_main_thread;
        pending_ = std::async(std::launch::async, [ep, lim, q, want_status, want_monitor, this] {
            PollResult r;
            if (want_status) {
                r.ran_status = true;
                r.status = ras_status(ep, q, lim, &cancel_);
            }
            if (want_monitor && !cancel_) {
                r.monitor = std::make_unique<RasMonitor>();
                r.monitor_outcome = r.monitor->open(ep, "lifecycle", true, lim, r.monitor_detail, &cancel_);
            }
            return r;
        });
    }

    void collect(PollResult r, Snapshot& snap) {
        if (r.ran_status) {
            NcclRasReport report = to_report(r.status, snap.time);
            if (const int v = nccl_version_code(report.nccl_version)) version_ = v;
            // "refused" means no NCCL process listens on this node (yet/any more): say it once.
            const bool quiet = report.outcome == "refused" && last_outcome_ == "refused";
            if (report.outcome != "ok" && !quiet)
                snap.warnings.push_back("nccl ras: STATUS " + report.outcome + ": " + report.detail);
            last_outcome_ = report.outcome;
            snap.nccl.ras.push_back(std::move(report));
        }
        if (r.monitor) {
            if (r.monitor_outcome == "ok") {
                monitor_ = std::move(r.monitor);
            } else if (r.monitor_outcome == "unsupported") {
                monitor_supported_ = false;  // NCCL < 2.29: STATUS polling only
            } else if (r.monitor_outcome != "refused") {
                snap.warnings.push_back("nccl ras: MONITOR " + r.monitor_outcome + ": " + r.monitor_detail);
            }
        }
    }

    void inspector(Snapshot& snap) {
        if (DIR* d = ::opendir(c_.inspector_dir.c_str())) {
            while (dirent* e = ::readdir(d)) {
                if (!is_inspector_file_name(e->d_name) || inspector_files_.size() >= kInspectorMaxFiles)
                    continue;
                const std::string path = c_.inspector_dir + "/" + e->d_name;
                if (!inspector_files_.count(path))
                    inspector_files_.emplace(path, std::make_unique<TailFile>(path, kInspectorBacklog));
            }
            ::closedir(d);
        }
        std::size_t budget = kInspectorBytesTotal;
        for (auto& [path, tail] : inspector_files_) {
            if (budget == 0) break;
            std::vector<std::string> lines;
            const auto before = tail->offset();
            if (std::string err = tail->read_lines(std::min(budget, kInspectorBytesPerFile), lines);
                !err.empty())
                continue;  // a file that vanished: the process exited and the dir was cleaned
            budget -= std::min<std::uint64_t>(budget, tail->offset() >= before ? tail->offset() - before : 0);
            for (const auto& line : lines) {
                std::string why;
                if (auto rec = parse_inspector_line(line, why)) {
                    aggregator_.add(*rec);
                } else if (inspector_warned_[path]++ == 0) {
                    snap.warnings.push_back("nccl inspector: " + path + ": " + why);
                }
            }
        }
        snap.nccl.inspector = aggregator_.take_sample();
    }

    NcclSourceConfig c_;
    LogScanner logs_;
    std::atomic<bool> cancel_{false};
    std::future<PollResult> pending_;
    std::unique_ptr<RasMonitor> monitor_;
    bool monitor_supported_ = true;
    int version_ = 0;
    double first_time_ = -1, next_status_ = 0, next_monitor_ = 0;
    std::string last_outcome_;
    std::map<std::string, std::unique_ptr<TailFile>> inspector_files_;
    std::map<std::string, int> inspector_warned_;
    InspectorAggregator aggregator_;
};

}  // namespace

double status_interval_factor(int version_code) {
    if (version_code >= 22600 && version_code < 22902) return 10;  // #1669/#1718/#1762: fixed in 2.29.2
    return 1;
}

NcclSourceConfig nccl_config_from_environment(const std::string& host) {
    NcclSourceConfig c;
    const std::string mode = env("STALLSCOPE_NCCL_RAS");
    if (mode == "poll" || mode == "monitor" || mode == "off" || mode == "auto") c.ras_mode = mode;
    if (env("NCCL_RAS_ENABLE") == "0") c.ras_mode = "off";
    c.endpoint = parse_ras_addr(env("NCCL_RAS_ADDR"));
    if (auto v = parse_double(env("STALLSCOPE_NCCL_RAS_INTERVAL")); v && *v >= 30)
        c.ras_interval_seconds = *v;
    if (auto v = parse_double(env("STALLSCOPE_NCCL_RAS_DELAY")); v && *v >= 0) c.ras_start_delay_seconds = *v;
    c.inspector_dir = env("NCCL_INSPECTOR_DUMP_DIR");
    if (c.inspector_dir.empty() && !env("SLURM_JOB_ID").empty()) {
        const std::string fallback = "nccl-inspector-" + env("SLURM_JOB_ID");  // the plugin's default
        struct stat st {};
        if (::stat(fallback.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) c.inspector_dir = fallback;
    }
    c.log_globs = split_paths(env("STALLSCOPE_NCCL_LOGS"));
    if (const std::string f = env("NCCL_DEBUG_FILE"); !f.empty())
        c.log_globs.push_back(debug_file_glob(f, host));
    return c;
}

std::unique_ptr<Source> make_nccl_source(NcclSourceConfig config) {
    return std::make_unique<NcclSource>(std::move(config));
}

}  // namespace stallscope::nccl

namespace stallscope {

std::unique_ptr<Source> make_nccl_source(const Roots&) {
    return nccl::make_nccl_source(nccl::nccl_config_from_environment(local_hostname()));
}

}  // namespace stallscope
