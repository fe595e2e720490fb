#include "libstallscope/sinks/alertmanager.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "libstallscope/sinks/curl_library.h"
#include "libstallscope/util/stop_signals.h"
#include "stallscope_config.h"

namespace stallscope {

namespace {

extern "C" size_t discard_body(char*, size_t size, size_t count, void*) {
    return size * count;
}

// One easy handle (keeps the connection alive between posts) driven through a multi handle, so the
// transfer can be abandoned within kAbortPoll of close()'s deadline instead of blocking in
// curl_easy_perform.
constexpr int kAbortPollMs = 50;

double system_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::unique_ptr<AlertmanagerSink> AlertmanagerSink::create(std::string url, Labels static_labels,
                                                           AlertmanagerOptions options, std::string& error) {
    auto normalized = normalize_alertmanager_url(url, error);
    if (!normalized) return nullptr;
    // Loaded (and curl_global_init'ed) here, before any worker thread exists.
    const CurlLibrary* curl = curl_library(error);
    if (curl == nullptr) return nullptr;
    std::unique_ptr<AlertmanagerSink> sink(
        new AlertmanagerSink(std::move(*normalized), std::move(static_labels), std::move(options)));
    sink->curl_ = curl;
    try {
        const StopSignalsBlockedForNewThreads stop_signals_to_the_main_thread;
        sink->worker_ = std::thread([s = sink.get()] { s->run(); });
    } catch (const std::system_error& e) {
        error = std::string("stallscope: cannot start the Alertmanager worker thread: ") + e.what();
        return nullptr;
    }
    return sink;
}

AlertmanagerSink::AlertmanagerSink(std::string url, Labels static_labels, AlertmanagerOptions options)
    : url_(std::move(url)),
      options_(std::move(options)),
      tracker_(std::move(static_labels), options_.resend_interval_seconds, options_.generator_url) {
    options_.queue_capacity = std::max<std::size_t>(options_.queue_capacity, 1);
    options_.max_attempts = std::max(options_.max_attempts, 1);
    if (!options_.clock) options_.clock = system_now;
}

AlertmanagerSink::~AlertmanagerSink() {
    close();
}

void AlertmanagerSink::update(const Snapshot& snapshot, const Profile& profile) {
    std::string payload;
    {
        std::lock_guard lock(tracker_mutex_);
        payload = tracker_.update(snapshot, profile);
    }
    if (!payload.empty()) enqueue(std::move(payload));
}

void AlertmanagerSink::enqueue(std::string payload) {
    {
        std::lock_guard lock(mutex_);
        if (closed_ && stopping_) return;  // update() after close(): nothing listens any more
        if (queue_.size() >= options_.queue_capacity) {
            queue_.pop_front();
            ++stats_.dropped;
        }
        queue_.push_back(std::move(payload));
    }
    wake_.notify_all();
}

void AlertmanagerSink::close() {
    {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        closed_ = true;
    }
    if (options_.resolve_on_close) {
        std::string payload;
        {
            std::lock_guard lock(tracker_mutex_);
            payload = tracker_.resolve_all(options_.clock());
        }
        if (!payload.empty()) enqueue(std::move(payload));
    }
    {
        std::unique_lock lock(mutex_);
        stopping_ = true;
        deadline_ = std::chrono::steady_clock::now() + options_.close_timeout;
        wake_.notify_all();
        if (!wake_.wait_until(lock, deadline_, [this] { return worker_done_; })) {
            abort_ = true;  // the transfer in flight (if any) stops within kAbortPollMs
            stats_.dropped += queue_.size();
            queue_.clear();
        }
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
}

AlertmanagerStats AlertmanagerSink::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

std::string AlertmanagerSink::last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
}

void AlertmanagerSink::run() {
    CURL* easy = curl_->easy_init();
    CURLM* multi = curl_->multi_init();
    CurlHandles curl{easy, multi};
    for (;;) {
        std::string payload;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty() || abort_) break;
            payload = std::move(queue_.front());
            queue_.pop_front();
        }
        if (easy == nullptr || multi == nullptr) {
            std::lock_guard lock(mutex_);
            ++stats_.failed;
            last_error_ = "stallscope: cannot initialise libcurl";
            continue;
        }
        post_with_retries(curl, payload);
    }
    if (multi != nullptr) curl_->multi_cleanup(multi);
    if (easy != nullptr) curl_->easy_cleanup(easy);
    {
        std::lock_guard lock(mutex_);
        worker_done_ = true;
    }
    wake_.notify_all();
}

bool AlertmanagerSink::post_with_retries(const CurlHandles& curl, const std::string& payload) {
    auto backoff = options_.retry_backoff;
    for (int attempt = 1;; ++attempt) {
        bool retryable = false;
        std::string error;
        if (post_once(curl, payload, retryable, error)) {
            std::lock_guard lock(mutex_);
            ++stats_.posted;
            return true;
        }
        std::unique_lock lock(mutex_);
        last_error_ = "stallscope: POST " + url_ + ": " + error;
        if (!retryable || attempt >= options_.max_attempts || abort_) {
            ++stats_.failed;
            return false;
        }
        ++stats_.retries;
        auto until = std::min(std::chrono::steady_clock::now() + backoff, deadline_);
        wake_.wait_until(lock, until, [this] { return abort_.load(); });
        backoff = std::min(backoff * 2, options_.retry_backoff * 8);
    }
}

bool AlertmanagerSink::post_once(const CurlHandles& handles, const std::string& payload, bool& retryable,
                                 std::string& error) {
    using namespace std::chrono;
    CURL* curl = static_cast<CURL*>(handles.easy);
    CURLM* multi = static_cast<CURLM*>(handles.multi);
    milliseconds timeout = options_.request_timeout;
    {
        std::lock_guard lock(mutex_);
        if (deadline_ != steady_clock::time_point::max()) {
            // While closing, no request may outlive close()'s deadline.
            timeout = std::min(timeout, duration_cast<milliseconds>(deadline_ - steady_clock::now()));
        }
    }
    if (timeout.count() <= 0) {
        error = "close() deadline reached";
        return false;
    }
    char error_buffer[CURL_ERROR_SIZE] = {};
    curl_slist* headers = curl_->slist_append(nullptr, "Content-Type: application/json");
    headers = curl_->slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_->easy_reset(curl);
    curl_->easy_setopt(curl, CURLOPT_URL, url_.c_str());
    curl_->easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl_->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_->easy_setopt(curl, CURLOPT_USERAGENT, "stallscope/" STALLSCOPE_VERSION);
    curl_->easy_setopt(curl, CURLOPT_POSTFIELDS, payload.data());
    curl_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    curl_->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                       static_cast<long>(std::min(options_.connect_timeout, timeout).count()));
    curl_->easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
    curl_->easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    CURLcode rc = CURLE_OK;
    if (curl_->multi_add_handle(multi, curl) != CURLM_OK) {
        rc = CURLE_FAILED_INIT;
    } else {
        for (int running = 1;;) {
            if (curl_->multi_perform(multi, &running) != CURLM_OK) {
                rc = CURLE_FAILED_INIT;
                break;
            }
            if (running == 0) {
                int left = 0;
                CURLMsg* msg = curl_->multi_info_read(multi, &left);
                rc = msg != nullptr && msg->msg == CURLMSG_DONE ? msg->data.result : CURLE_FAILED_INIT;
                break;
            }
            if (abort_) {
                rc = CURLE_ABORTED_BY_CALLBACK;
                break;
            }
            curl_->multi_poll(multi, nullptr, 0, kAbortPollMs, nullptr);
        }
        curl_->multi_remove_handle(multi, curl);
    }
    long status = 0;
    if (rc == CURLE_OK) curl_->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_->easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    curl_->slist_free_all(headers);
    if (rc != CURLE_OK) {
        error = rc == CURLE_ABORTED_BY_CALLBACK ? "abandoned at close() deadline"
                : error_buffer[0] != '\0'       ? error_buffer
                                                : curl_->easy_strerror(rc);
        retryable = rc != CURLE_ABORTED_BY_CALLBACK;
        return false;
    }
    if (status >= 200 && status < 300) return true;
    error = "HTTP " + std::to_string(status);
    // 4xx means Alertmanager rejected the payload: sending it again cannot help (408/429 excepted).
    retryable = status >= 500 || status == 408 || status == 429;
    return false;
}

}  // namespace stallscope
