// When a hang is confirmed, keep the evidence before PyTorch's watchdog tears the ranks down: one
// `evidence.<step>.<host>.<n>.json` per hang episode next to the timeline, holding the detector's own
// numbers, two /proc passes of the job's threads a second apart, and the flight-recorder dumps asked for
// through their FIFOs (raw copies kept as `fr.<step>.<host>.<n>.rank<r>.pickle` for torchfrtrace).
//
// Bounded per node: <= 60 s wall, <= 1 s of this thread's CPU, <= 64 MiB of dump data parsed. It runs on a
// thread of its own (HangEvidenceCapture) so the sampling loop never waits for it: a /proc read that
// blocks (environ takes the target's mmap lock) or a dump that never comes costs a late evidence file,
// never a late sample or a delayed job end. No signal, no ptrace, no blocking FIFO open.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "libstallscope/hang/culprit.h"
#include "libstallscope/hang/flight_recorder_trigger.h"
#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

// The reasons that mean "hang confirmed": each is already windowed by its rule (busy-wait for
// hang_min_samples, RAS mismatch held over two polls), so one sample carrying it is a confirmation.
bool is_hang_reason(std::string_view code);

// One capture per hang episode. An episode starts at the first sample with a hang reason and ends after
// kClearSamples samples in a row without one; a hang that comes back after that is a new episode.
class HangEpisodes {
  public:
    static constexpr int kClearSamples = 3;
    // True exactly once per episode: on its first sample. Called once per sample (cheap: a flag and a scan
    // of the profile's few reasons).
    bool confirmed(const Profile& profile);
    bool confirmed(bool hang_now);
    int episode() const { return episode_; }  // 1-based; 0 before the first

  private:
    bool in_episode_ = false;
    int clear_samples_ = 0;
    int episode_ = 0;
};

struct CaptureBudget {
    double max_wall_seconds = 60;
    double max_cpu_seconds = 1;
    std::size_t max_parsed_bytes = 64u << 20;
    double proc_gap_seconds = 1;
};

struct CaptureRequest {
    std::string out_dir, step, host;
    int episode = 1;
    Json detector = Json::object();  // the detector's numbers at confirmation (detector_evidence())
    std::vector<pid_t> pids;         // the job's processes on this node
    std::string proc_root = "/proc";
    // Empty: read from the job processes' environment (TORCH_NCCL_DEBUG_INFO_PIPE_FILE, ...).
    std::optional<FlightRecorderPaths> flight_recorder;
    // GPU of a job process (NVML's compute processes); GPU states by index, from the last sample.
    std::map<long, int> gpu_of_pid;
    std::map<int, RankGpuState> gpus;
    std::vector<RasMismatch> ras;
    CaptureBudget budget;
};

struct CaptureResult {
    std::string path;  // the evidence file ("" when it could not be written)
    bool written = false;
    double wall_seconds = 0, cpu_seconds = 0;
    std::size_t file_bytes = 0, parsed_bytes = 0;
    std::string flight_recorder;  // dumped | no_flight_recorder | no_reader | buffer_off | timeout | ...
    int dumps = 0;
    std::vector<std::string> warnings;
};

// The detector's numbers for the evidence file, from the confirming sample and its profile: the hang
// reasons with their evidence, every GPU's utilization/power/SM activity/Xids and compute processes, and
// the sample's RAS reports. Also fills the request's gpus / gpu_of_pid / ras, and, when the request has no
// pids yet, its pids from the GPUs' compute processes owned by this step or job.
void fill_from_sample(CaptureRequest& request, const Snapshot& sample, const Profile& profile);

// The capture itself, synchronous (the thread below runs it). `cancel` stops the waits early.
CaptureResult capture_hang_evidence(const CaptureRequest& request, const std::atomic<bool>* cancel = nullptr);

// "evidence.<step>.<host>.<n>.json"
std::string evidence_file_name(const std::string& step, const std::string& host, int episode);

// Runs one capture at a time on its own thread.
class HangEvidenceCapture {
  public:
    HangEvidenceCapture() = default;
    ~HangEvidenceCapture();
    HangEvidenceCapture(const HangEvidenceCapture&) = delete;
    HangEvidenceCapture& operator=(const HangEvidenceCapture&) = delete;

    // Starts a capture; false (nothing started) while the previous one still runs.
    bool start(CaptureRequest request);
    bool running() const { return running_ && !state_->done; }
    // The finished capture's result, once.
    std::optional<CaptureResult> take_result();
    // At the helper's stop: asks the capture to end its waits and gives it up to `seconds`; one still
    // stuck after that (a /proc read blocked in the kernel) is left to the process exit.
    void stop(double seconds);

  private:
    struct State {
        std::atomic<bool> cancel{false};
        std::atomic<bool> done{false};
        std::mutex mutex;
        std::optional<CaptureResult> result;
    };
    std::shared_ptr<State> state_ = std::make_shared<State>();
    std::thread thread_;
    bool running_ = false;
};

}  // namespace stallscope
