// Alertmanager API v2 sink: POST /api/v2/alerts from a background worker, never from the sampling thread.
// Built only with libcurl's headers (STALLSCOPE_HAVE_CURL); libcurl itself is loaded when the first sink is
// created (curl_library.h). The payload logic lives in alertmanager_payload.h.
//
// update() turns the profile into a payload (AlertTracker) and pushes it on a bounded queue; when the
// queue is full the oldest payload is dropped and counted (firing alerts carry endsAt in the future, so
// a dropped resolve still expires on its own). The worker posts with connect and total timeouts and
// retries 5xx/429/transport errors a bounded number of times with exponential backoff. close() delivers
// what is queued, waiting at most close_timeout; with resolve_on_close it first queues a resolve for every
// active alert (the per-step helper: its job is gone), without it the alerts stay firing until their
// endsAt lapses (the periodic CLI: stopping the monitor does not clear the fault; Prometheus does the
// same on shutdown, and a restart within endsAt continues the same alert instead of flapping).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"
#include "libstallscope/sinks/alertmanager_payload.h"
#include "libstallscope/sinks/sink_labels.h"

namespace stallscope {

struct CurlLibrary;  // curl_library.h

struct AlertmanagerOptions {
    std::chrono::milliseconds connect_timeout{2000};
    std::chrono::milliseconds request_timeout{5000};  // whole request, connect included
    int max_attempts = 3;                             // first try + 2 retries
    std::chrono::milliseconds retry_backoff{250};     // doubles per retry, capped at 8x
    std::size_t queue_capacity = 16;                  // payloads; each holds the full alert set
    double resend_interval_seconds = 60;            // firing alerts re-sent this often (resend_interval_for)
    bool resolve_on_close = true;                   // false: active alerts lapse at endsAt after close()
    std::chrono::milliseconds close_timeout{3000};  // bound on close()
    std::string generator_url;                      // optional link back (e.g. the job's page)
    std::function<double()> clock;                  // epoch seconds for close(); default: system clock
};

struct AlertmanagerStats {
    std::uint64_t posted = 0;   // payloads Alertmanager accepted (2xx)
    std::uint64_t failed = 0;   // payloads given up on after the last attempt
    std::uint64_t retries = 0;  // extra attempts made
    std::uint64_t dropped = 0;  // payloads dropped from a full queue
};

class AlertmanagerSink {
  public:
    // nullptr with `error` set when the URL is unusable or libcurl cannot be loaded.
    static std::unique_ptr<AlertmanagerSink> create(std::string url, Labels static_labels,
                                                    AlertmanagerOptions options, std::string& error);
    ~AlertmanagerSink();
    AlertmanagerSink(const AlertmanagerSink&) = delete;
    AlertmanagerSink& operator=(const AlertmanagerSink&) = delete;

    // Cheap and non-blocking: diff, render, enqueue.
    void update(const Snapshot& snapshot, const Profile& profile);
    // Resolve all active alerts (options.resolve_on_close) and flush, waiting at most options.close_timeout
    // (+ ~50 ms to abandon a transfer in flight). Idempotent; the destructor calls it.
    void close();

    AlertmanagerStats stats() const;
    std::string last_error() const;
    const std::string& url() const { return url_; }

  private:
    AlertmanagerSink(std::string url, Labels static_labels, AlertmanagerOptions options);
    void enqueue(std::string payload);
    void run();
    struct CurlHandles {
        void* easy;   // CURL*
        void* multi;  // CURLM*
    };
    bool post_with_retries(const CurlHandles& curl, const std::string& payload);
    // True on a 2xx answer; else `error` says why and `retryable` whether another attempt may help.
    bool post_once(const CurlHandles& curl, const std::string& payload, bool& retryable, std::string& error);

    const std::string url_;
    const CurlLibrary* curl_ = nullptr;  // set by create(), never null afterwards
    AlertmanagerOptions options_;
    std::mutex tracker_mutex_;
    AlertTracker tracker_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::string> queue_;
    bool stopping_ = false, worker_done_ = false, closed_ = false;
    std::atomic<bool> abort_{false};
    std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
    AlertmanagerStats stats_;
    std::string last_error_;
    std::thread worker_;
};

}  // namespace stallscope
