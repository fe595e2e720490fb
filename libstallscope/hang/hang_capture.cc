#include "libstallscope/hang/hang_capture.h"

#include <time.h>

#include <chrono>
#include <cmath>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/nccl_json.h"
#include "libstallscope/util/atomic_file.h"
#include "libstallscope/util/counter_file.h"
#include "libstallscope/util/stop_signals.h"

namespace stallscope {
namespace {

using json_fields::or_null;
using json_fields::put;

double wall_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "1,5,..." (nccl_rules' rank_list) -> {1, 5}
std::vector<int> ranks_in_text(std::string_view text) {
    std::vector<int> out;
    int v = 0;
    bool in_number = false;
    for (const char c : text) {
        if (c >= '0' && c <= '9') {
            v = in_number ? v * 10 + (c - '0') : c - '0';
            if (v > 10'000'000) return out;
            in_number = true;
        } else {
            if (in_number) out.push_back(v);
            in_number = false;
        }
    }
    if (in_number) out.push_back(v);
    return out;
}

const EvidenceValue* evidence_at(const Evidence& e, const char* key) {
    const auto it = e.find(key);
    return it == e.end() ? nullptr : &it->second;
}

double evidence_number(const Evidence& e, const char* key) {
    const EvidenceValue* v = evidence_at(e, key);
    return v && std::holds_alternative<double>(*v) ? std::get<double>(*v) : -1;
}

Json gpu_state_json(const RankGpuState& g) {
    Json j = json_fields::object_of(5);
    put(j, "utilization_pct", or_null(g.utilization_pct));
    put(j, "sm_active_pct", or_null(g.sm_active_pct));
    put(j, "power_w", or_null(g.power_w));
    put(j, "power_limit_w", or_null(g.power_limit_w));
    put(j, "xid", g.xid);
    return j;
}

// One row per rank on this node: the process that holds the rank (the one on a GPU, else the lowest pid:
// data-loader workers inherit RANK from their parent), its GPU and its main thread.
Json ranks_json(const CaptureRequest& req, const ProcEvidence& proc) {
    std::map<int, const ProcessEvidence*> by_rank;
    for (const auto& p : proc.processes) {
        if (p.rank.rank < 0) continue;
        auto& slot = by_rank[p.rank.rank];
        const bool on_gpu = req.gpu_of_pid.count(p.pid) > 0;
        if (!slot || (on_gpu && !req.gpu_of_pid.count(slot->pid)) ||
            (on_gpu == (req.gpu_of_pid.count(slot->pid) > 0) && p.pid < slot->pid))
            slot = &p;
    }
    Json rows = Json::array();
    for (const auto& [rank, p] : by_rank) {
        int gpu = -1;
        std::string gpu_from;
        if (auto it = req.gpu_of_pid.find(p->pid); it != req.gpu_of_pid.end()) {
            gpu = it->second;
            gpu_from = "nvml_process";
        } else if (p->rank.local_rank >= 0 && req.gpus.count(p->rank.local_rank)) {
            gpu = p->rank.local_rank;  // torchrun's convention: cuda:LOCAL_RANK
            gpu_from = "local_rank";
        }
        Json row = json_fields::object_of(8);
        put(row, "rank", rank);
        put(row, "local_rank", p->rank.local_rank >= 0 ? Json(p->rank.local_rank) : Json(nullptr));
        put(row, "pid", p->pid);
        put(row, "gpu", gpu >= 0 ? Json(gpu) : Json(nullptr));
        put(row, "gpu_from", gpu_from);
        const auto g = gpu >= 0 ? req.gpus.find(gpu) : req.gpus.end();
        put(row, "gpu_state", g != req.gpus.end() ? gpu_state_json(g->second) : Json(nullptr));
        Json main_thread = nullptr;
        if (const ThreadEvidence* t = p->main_thread()) {
            main_thread = json_fields::object_of(5);
            put(main_thread, "activity", to_string(t->activity));
            put(main_thread, "state", std::string(1, t->state_second));
            put(main_thread, "wchan", t->wchan);
            put(main_thread, "cpu_share", proc.gap_seconds > 0 ? t->cpu_seconds / proc.gap_seconds : 0.0);
            put(main_thread, "threads_in_d", p->threads_in_d);
        }
        put(row, "main_thread", std::move(main_thread));
        rows.push_back(std::move(row));
    }
    return rows;
}

Json ras_json(const std::vector<RasMismatch>& ras) {
    Json out = Json::array();
    for (const auto& m : ras) {
        Json laggards = Json::array();
        for (const auto& [rank, count] : m.laggards) laggards.push_back(Json::array({rank, count}));
        Json j = json_fields::object_of(3);
        put(j, "function", m.function);
        put(j, "max_count", m.max_count);
        put(j, "laggards", std::move(laggards));
        out.push_back(std::move(j));
    }
    return out;
}

}  // namespace

bool is_hang_reason(std::string_view code) {
    return code == "gpu_busy_wait_hang" || code == "nccl_collective_hang";
}

bool HangEpisodes::confirmed(const Profile& profile) {
    for (const auto& r : profile.reasons)
        if (is_hang_reason(r.code)) return confirmed(true);
    return confirmed(false);
}

bool HangEpisodes::confirmed(bool hang_now) {
    if (!hang_now) {
        if (in_episode_ && ++clear_samples_ >= kClearSamples) in_episode_ = false;
        return false;
    }
    clear_samples_ = 0;
    if (in_episode_) return false;
    in_episode_ = true;
    ++episode_;
    return true;
}

void fill_from_sample(CaptureRequest& req, const Snapshot& s, const Profile& profile) {
    Json reasons = Json::array();
    for (const auto& r : profile.reasons) {
        reasons.push_back(to_json(r));
        if (r.code != "nccl_collective_hang") continue;
        RasMismatch m;
        if (const EvidenceValue* f = evidence_at(r.evidence, "function");
            f && std::holds_alternative<std::string>(*f))
            m.function = std::get<std::string>(*f);
        const double lagging = evidence_number(r.evidence, "lagging_count");
        const double top = evidence_number(r.evidence, "max_count");
        m.max_count = top > 0 ? static_cast<std::uint64_t>(top) : 0;
        if (const EvidenceValue* l = evidence_at(r.evidence, "lagging_ranks");
            l && std::holds_alternative<std::string>(*l))
            for (const int rank : ranks_in_text(std::get<std::string>(*l)))
                m.laggards.emplace_back(rank, lagging >= 0 ? static_cast<std::uint64_t>(lagging) : 0);
        if (!m.laggards.empty()) req.ras.push_back(std::move(m));
    }
    Json gpus = Json::array();
    const bool no_pids = req.pids.empty();
    for (const auto& g : s.gpus) {
        RankGpuState st;
        st.utilization_pct = g.utilization_pct;
        st.power_w = g.power_w;
        st.power_limit_w = g.power_limit_w;
        if (g.gpm) st.sm_active_pct = g.gpm->sm_active_pct;
        st.xid = !g.xid.empty();
        req.gpus[g.index] = st;
        if (g.processes)
            for (const auto& p : *g.processes) {
                req.gpu_of_pid[static_cast<long>(p.pid)] = g.index;
                // Without a pid list from the job's cgroup, the job's own GPU processes are the ranks.
                if (no_pids && (p.owner == "step" || p.owner == "job") && p.pid > 0)
                    req.pids.push_back(static_cast<pid_t>(p.pid));
            }
        gpus.push_back(gpu_to_json(g));
    }
    req.detector = json_fields::object_of(5);
    put(req.detector, "sample_time", format_rfc3339(s.time));
    put(req.detector, "label", profile.label);
    put(req.detector, "reasons", std::move(reasons));
    put(req.detector, "gpus", std::move(gpus));
    put(req.detector, "nccl", nccl_to_json(s.nccl));
}

std::string evidence_file_name(const std::string& step, const std::string& host, int episode) {
    return "evidence." + step + "." + host + "." + std::to_string(episode) + ".json";
}

CaptureResult capture_hang_evidence(const CaptureRequest& req, const std::atomic<bool>* cancel) {
    CaptureResult result;
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = thread_cpu_seconds();
    const double started = wall_now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };

    // 1. Where the flight recorder listens: the request's, else the first job process that says.
    FlightRecorderPaths fr = req.flight_recorder.value_or(FlightRecorderPaths{});
    if (!req.flight_recorder) {
        for (const pid_t pid : req.pids) {
            std::string error;
            const auto env =
                read_text_file(req.proc_root + "/" + std::to_string(pid) + "/environ", error, 256 * 1024);
            if (!env) continue;
            FlightRecorderPaths p = flight_recorder_paths_from_environ(*env);
            if (!p.pipe_prefix.empty() || p.buffer_off) {
                fr = p;
                break;
            }
        }
    }
    // 2. Ask every local rank for a dump first: the rank dumps while we read /proc.
    timespec requested_at{};
    ::clock_gettime(CLOCK_REALTIME, &requested_at);
    std::vector<DumpRequest> requests;
    if (fr.buffer_off)
        result.flight_recorder = "buffer_off";  // the job turned it off: nothing to ask for
    else if (fr.pipe_prefix.empty())
        result.flight_recorder = "no_flight_recorder";
    else
        requests = request_dumps(fr.pipe_prefix);
    std::vector<int> asked;
    for (const auto& r : requests)
        if (r.outcome == "requested") asked.push_back(r.rank);
    if (!fr.pipe_prefix.empty() && !fr.buffer_off)
        result.flight_recorder = requests.empty() ? "no_pipe" : asked.empty() ? "no_reader" : "requested";

    // 3. Two /proc passes a second apart.
    ProcLimits limits;
    limits.gap_seconds = req.budget.proc_gap_seconds;
    const ProcEvidence proc = sample_job_threads(req.proc_root, req.pids, limits);

    // 4. The dumps, within what is left of the wall budget (2 s kept for writing).
    std::vector<DumpRead> dumps;
    if (!asked.empty() && !fr.dump_prefix.empty()) {
        DumpWait wait;
        wait.requested_at = requested_at;
        wait.deadline_seconds = std::max(0.0, req.budget.max_wall_seconds - 2 - elapsed());
        wait.max_bytes = req.budget.max_parsed_bytes;
        wait.cancel = cancel;
        // 0.1 s of the CPU budget kept for the summaries and the file.
        wait.cpu_limit_seconds = cpu0 + std::max(0.0, req.budget.max_cpu_seconds - 0.1);
        dumps = wait_for_dumps(fr.dump_prefix, asked, wait);
    } else if (!asked.empty()) {
        result.warnings.push_back("flight recorder asked, but the job sets no dump file prefix");
    }
    Json dump_rows = Json::array();
    for (auto& d : dumps) {
        Json row = json_fields::object_of(5);
        put(row, "rank", d.rank);
        put(row, "path", d.path);
        put(row, "outcome", d.outcome);
        const bool parsed = d.outcome == "read";
        if (parsed || d.outcome == "not_parsed_cpu_budget") {
            ++result.dumps;
            if (parsed) result.parsed_bytes += d.raw.size();
            // The raw dump, kept: the rank overwrites its file on the next dump, torchfrtrace reads this.
            const std::string copy = req.out_dir + "/fr." + req.step + "." + req.host + "." +
                                     std::to_string(req.episode) + ".rank" + std::to_string(d.rank) +
                                     ".pickle";
            std::string error;
            if (write_file_atomically(copy, d.raw, false, error))
                put(row, "copy", copy);
            else
                result.warnings.push_back("flight recorder copy " + copy + ": " + error);
            if (parsed) put(row, "summary", to_json(d.summary));
            for (const auto& w : d.warnings)
                result.warnings.push_back("rank " + std::to_string(d.rank) + ": " + w);
        }
        dump_rows.push_back(std::move(row));
    }
    if (!asked.empty()) result.flight_recorder = result.dumps > 0 ? "dumped" : "timeout";
    Json request_rows = Json::array();
    for (const auto& r : requests)
        request_rows.push_back(Json{{"rank", r.rank}, {"pipe", r.pipe}, {"outcome", r.outcome}});

    result.cpu_seconds = thread_cpu_seconds() - cpu0;
    result.wall_seconds = elapsed();
    if (result.cpu_seconds > req.budget.max_cpu_seconds)
        result.warnings.push_back("capture used " + std::to_string(result.cpu_seconds) +
                                  " s of CPU (budget " + std::to_string(req.budget.max_cpu_seconds) + " s)");
    for (const auto& w : proc.warnings) result.warnings.push_back(w);

    Json frj = json_fields::object_of(5);
    put(frj, "status", result.flight_recorder);
    put(frj, "pipe_prefix", fr.pipe_prefix);
    put(frj, "dump_prefix", fr.dump_prefix);
    put(frj, "requests", std::move(request_rows));
    put(frj, "dumps", std::move(dump_rows));
    Json capture = json_fields::object_of(6);
    put(capture, "wall_seconds", result.wall_seconds);
    put(capture, "cpu_seconds", result.cpu_seconds);
    put(capture, "parsed_bytes", result.parsed_bytes);
    put(capture, "max_wall_seconds", req.budget.max_wall_seconds);
    put(capture, "max_cpu_seconds", req.budget.max_cpu_seconds);
    put(capture, "max_parsed_bytes", req.budget.max_parsed_bytes);
    Json doc = json_fields::object_of(12);
    put(doc, "schema", "stallscope.hang_evidence/1");
    put(doc, "time", format_rfc3339(started));
    put(doc, "host", req.host);
    put(doc, "step", req.step);
    put(doc, "episode", req.episode);
    put(doc, "ranks", ranks_json(req, proc));
    put(doc, "ras", ras_json(req.ras));
    put(doc, "flight_recorder", std::move(frj));
    put(doc, "detector", Json(req.detector));
    put(doc, "proc", to_json(proc));
    put(doc, "capture", std::move(capture));
    put(doc, "warnings", result.warnings);

    result.path = req.out_dir + "/" + evidence_file_name(req.step, req.host, req.episode);
    const std::string text = doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
    std::string error;
    result.written = write_file_atomically(result.path, text, true, error);
    if (!result.written) result.warnings.push_back("evidence file " + result.path + ": " + error);
    result.file_bytes = text.size();
    return result;
}

HangEvidenceCapture::~HangEvidenceCapture() {
    stop(0);
}

bool HangEvidenceCapture::start(CaptureRequest request) {
    if (running()) return false;
    if (thread_.joinable()) thread_.join();  // finished: done is set
    state_ = std::make_shared<State>();
    // The thread owns what it needs (state by shared_ptr): stop() may leave it behind without a dangling
    // reference.
    const StopSignalsBlockedForNewThreads stop_signals_to_the_main_thread;
    thread_ = std::thread([state = state_, req = std::move(request)] {
        CaptureResult r;
        try {
            r = capture_hang_evidence(req, &state->cancel);
        } catch (const std::exception& e) {  // bad_alloc, a filesystem error: a reason, never a crash
            r.warnings.push_back(std::string("capture failed: ") + e.what());
        }
        {
            std::lock_guard<std::mutex> lock(state->mutex);
            state->result = std::move(r);
        }
        state->done = true;
    });
    running_ = true;  // only once the thread exists: a failed std::thread must not block later captures
    return true;
}

std::optional<CaptureResult> HangEvidenceCapture::take_result() {
    if (!running_ || !state_->done) return std::nullopt;
    if (thread_.joinable()) thread_.join();
    running_ = false;
    std::lock_guard<std::mutex> lock(state_->mutex);
    return std::move(state_->result);
}

void HangEvidenceCapture::stop(double seconds) {
    if (!thread_.joinable()) return;
    state_->cancel = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!state_->done && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (state_->done)
        thread_.join();
    else
        thread_.detach();  // blocked in the kernel: the process exit ends it
}

}  // namespace stallscope
