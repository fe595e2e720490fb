#include "libstallscope/job/compare_speed.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace stallscope {
namespace {

// Run-to-run noise of the same training job is a few per cent; below this, two runs are "as fast".
constexpr double kDurationTolerance = 0.05;
constexpr double kBusBandwidthTolerance = 0.10;

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f s", s);
    return buf;
}

std::string percent_text(double relative) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.0f %%", relative * 100);
    return buf;
}

struct StepTime {
    double seconds = 0;
    bool final = true;  // every recording of the step ended with a verdict
};

std::map<std::string, StepTime> step_times(const JobReport& r) {
    std::map<std::string, StepTime> out;
    for (const auto& s : r.step_summaries) out[s.step_id].seconds = s.duration_seconds();
    for (const auto& n : r.nodes)
        if (n.incomplete || n.running || !n.verdict_recorded) out[n.step_id].final = false;
    return out;
}

std::string id_list(const std::map<std::string, StepTime>& steps) {
    std::string out;
    for (const auto& [id, t] : steps) out += (out.empty() ? "" : ", ") + id;
    return out.empty() ? "none" : out;
}

// The mean over every host of the job's per-key bus bandwidth.
std::map<std::string, double> busbw_means(const BusBandwidth& b) {
    std::map<std::string, double> out;
    for (const auto& [key, sum_n] : b)
        if (sum_n.second > 0 && sum_n.first > 0) out[key] = sum_n.first / static_cast<double>(sum_n.second);
    return out;
}

bool measure_busbw(const BusBandwidth& busbw_a, const BusBandwidth& busbw_b, SpeedMeasure& m) {
    const auto a = busbw_means(busbw_a), b = busbw_means(busbw_b);
    double log_ratio = 0, sum_a = 0, sum_b = 0;
    int keys = 0;
    for (const auto& [key, bw_a] : a) {
        const auto it = b.find(key);
        if (it == b.end()) continue;
        log_ratio += std::log(it->second / bw_a), sum_a += bw_a, sum_b += it->second, ++keys;
    }
    if (keys == 0) return false;
    const double ratio = std::exp(log_ratio / keys);  // geometric mean: each collective counts the same
    m.basis = "nccl_busbw", m.unit = "GB/s", m.a = sum_a / keys, m.b = sum_b / keys, m.relative = ratio - 1;
    m.speed = ratio < 1 - kBusBandwidthTolerance   ? Speed::slower
              : ratio > 1 + kBusBandwidthTolerance ? Speed::faster
                                                   : Speed::same;
    char buf[200];
    std::snprintf(
        buf, sizeof buf,
        "NCCL bus bandwidth of the %d collective size(s) both jobs ran: %.1f GB/s in A, %.1f GB/s in "
        "B (%+.0f %%)",
        keys, m.a, m.b, m.relative * 100);
    m.detail = buf;
    return true;
}

}  // namespace

const char* speed_name(Speed s) {
    switch (s) {
        case Speed::slower:
            return "slower";
        case Speed::faster:
            return "faster";
        case Speed::same:
            return "same";
        case Speed::unknown:
            break;
    }
    return "unknown";
}

SpeedMeasure measure_speed(const JobReport& a, const JobReport& b, const BusBandwidth& busbw_a,
                           const BusBandwidth& busbw_b) {
    SpeedMeasure m;
    if (measure_busbw(busbw_a, busbw_b, m)) return m;
    const auto steps_a = step_times(a), steps_b = step_times(b);
    std::vector<std::string> ids;
    for (const auto& [id, t] : steps_a)
        if (steps_b.count(id)) ids.push_back(id);
    std::string which = "step(s) " + id_list(steps_a);
    double seconds_a = 0, seconds_b = 0;
    bool final_a = true, final_b = true;
    if (ids.empty() && steps_a.size() == 1 && steps_b.size() == 1) {  // one step each, named differently
        seconds_a = steps_a.begin()->second.seconds, final_a = steps_a.begin()->second.final;
        seconds_b = steps_b.begin()->second.seconds, final_b = steps_b.begin()->second.final;
        which = "step " + steps_a.begin()->first + " of A and step " + steps_b.begin()->first + " of B";
    } else if (ids.empty()) {
        m.detail = "A and B ran no step in common (A: " + id_list(steps_a) + "; B: " + id_list(steps_b) +
                   "), so their durations do not compare, and neither has NCCL bandwidth records of a "
                   "collective the other ran";
        return m;
    } else {
        which.clear();
        for (const auto& id : ids) {
            which += (which.empty() ? "step(s) " : ", ") + id;
            seconds_a += steps_a.at(id).seconds, final_a = final_a && steps_a.at(id).final;
            seconds_b += steps_b.at(id).seconds, final_b = final_b && steps_b.at(id).final;
        }
    }
    m.basis = "step_durations", m.unit = "s", m.a = seconds_a, m.b = seconds_b;
    if (seconds_a <= 0 || seconds_b <= 0) {
        m.basis.clear();
        m.detail = "the " + which + " hold fewer than two samples in " + (seconds_a <= 0 ? "A" : "B") +
                   ": no duration to compare";
        return m;
    }
    m.relative = (seconds_b - seconds_a) / seconds_a;
    // A duration is known to about one sampling interval at each end.
    const double interval = std::max(sampling_interval(a), sampling_interval(b));
    const double tolerance = std::max(kDurationTolerance * seconds_a, 2 * interval);
    const std::string durations = which + " took " + seconds_text(seconds_a) + (final_a ? "" : " so far") +
                                  " in A and " + seconds_text(seconds_b) + (final_b ? "" : " so far") +
                                  " in B (" + percent_text(m.relative) + ")";
    if (final_a && final_b) {
        m.speed = seconds_b - seconds_a > tolerance   ? Speed::slower
                  : seconds_a - seconds_b > tolerance ? Speed::faster
                                                      : Speed::same;
        m.detail = durations + (m.speed == Speed::same ? ", equal within " + seconds_text(tolerance) : "");
    } else if (!final_b && final_a && seconds_b - seconds_a > tolerance) {
        m.speed = Speed::slower;  // B's unfinished step is already longer than A's whole step
        m.detail = durations;
    } else if (!final_a && final_b && seconds_a - seconds_b > tolerance) {
        m.speed = Speed::faster;
        m.detail = durations;
    } else {
        const char* who = final_a ? "B has" : final_b ? "A has" : "A and B have";
        m.detail = durations + "; " + who +
                   " a recording that did not end with a verdict (still running, or its helper stopped), so "
                   "a duration is only a lower bound";
    }
    return m;
}

}  // namespace stallscope
