#include "libstallscope/rules/thresholds.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "libstallscope/util/parse_number.h"

namespace stallscope {
namespace {

constexpr double kInf = 1e300;

// The single list of keys: the loader, thresholds_as_pairs and the documented config file follow it.
constexpr std::array kKeys = {
    ThresholdKey{"min_step_seconds", &Thresholds::min_step_seconds, 0, kInf},
    ThresholdKey{"verdict_slow_min_share", &Thresholds::verdict_slow_min_share, 0, 1},
    ThresholdKey{"verdict_sustained_seconds", &Thresholds::verdict_sustained_seconds, 0, kInf},
    ThresholdKey{"verdict_transient_max_share", &Thresholds::verdict_transient_max_share, 0, 1},
    ThresholdKey{"verdict_startup_max_seconds", &Thresholds::verdict_startup_max_seconds, 0, kInf},
    ThresholdKey{"collectors_failing_min_share", &Thresholds::collectors_failing_min_share, 0, 1},
    ThresholdKey{"cnp_handled_per_s", &Thresholds::cnp_handled_per_s, 0, kInf},
    ThresholdKey{"ecn_marked_per_s", &Thresholds::ecn_marked_per_s, 0, kInf},
    ThresholdKey{"pfc_rx_pause_occupancy_pct", &Thresholds::pfc_rx_pause_occupancy_pct, 0, 100},
    ThresholdKey{"pfc_tx_pause_occupancy_pct", &Thresholds::pfc_tx_pause_occupancy_pct, 0, 100},
    ThresholdKey{"pfc_pause_frames_per_s", &Thresholds::pfc_pause_frames_per_s, 0, kInf},
    ThresholdKey{"pfc_sustained_intervals", &Thresholds::pfc_sustained_intervals, 1, 1e6},
    ThresholdKey{"host_rx_discards_per_s", &Thresholds::host_rx_discards_per_s, 0, kInf},
    ThresholdKey{"rdma_loss_slow_per_mpkt", &Thresholds::rdma_loss_slow_per_mpkt, 0, 1e6},
    ThresholdKey{"rdma_loss_fail_per_mpkt", &Thresholds::rdma_loss_fail_per_mpkt, 0, 1e6},
    ThresholdKey{"rdma_loss_min_events", &Thresholds::rdma_loss_min_events, 0, kInf},
    ThresholdKey{"rdma_loss_fail_per_s", &Thresholds::rdma_loss_fail_per_s, 0, kInf},
    ThresholdKey{"rnr_nak_min_events", &Thresholds::rnr_nak_min_events, 1, kInf},
    ThresholdKey{"iface_errors_per_mpkt", &Thresholds::iface_errors_per_mpkt, 0, 1e6},
    ThresholdKey{"iface_min_events", &Thresholds::iface_min_events, 0, kInf},
    ThresholdKey{"gpu_util_low_pct", &Thresholds::gpu_util_low_pct, 0, 100},
    ThresholdKey{"gpu_idle_util_pct", &Thresholds::gpu_idle_util_pct, 0, 100},
    ThresholdKey{"gpu_idle_window_seconds", &Thresholds::gpu_idle_window_seconds, 0, kInf},
    ThresholdKey{"gpu_memory_high_pct", &Thresholds::gpu_memory_high_pct, 0, 100},
    ThresholdKey{"gpu_temp_warn_c", &Thresholds::gpu_temp_warn_c, 0, 200},
    ThresholdKey{"thermal_clock_drop_pct", &Thresholds::thermal_clock_drop_pct, 0, 100},
    ThresholdKey{"thermal_temp_rise_c", &Thresholds::thermal_temp_rise_c, 0, 200},
    ThresholdKey{"hw_slowdown_window_seconds", &Thresholds::hw_slowdown_window_seconds, 1, kInf},
    ThresholdKey{"hw_slowdown_min_share", &Thresholds::hw_slowdown_min_share, 0, 1},
    ThresholdKey{"hang_util_pct", &Thresholds::hang_util_pct, 0, 100},
    ThresholdKey{"hang_power_max_frac", &Thresholds::hang_power_max_frac, 0, 1},
    ThresholdKey{"hang_min_samples", &Thresholds::hang_min_samples, 1, 1e6},
    ThresholdKey{"straggler_util_gap_pct", &Thresholds::straggler_util_gap_pct, 0, 100},
    ThresholdKey{"straggler_power_gap_frac", &Thresholds::straggler_power_gap_frac, 0, 1},
    ThresholdKey{"straggler_min_samples", &Thresholds::straggler_min_samples, 1, 1e6},
    ThresholdKey{"psi_memory_full_pct", &Thresholds::psi_memory_full_pct, 0, 100},
    ThresholdKey{"psi_io_full_pct", &Thresholds::psi_io_full_pct, 0, 100},
    ThresholdKey{"psi_cpu_some_pct", &Thresholds::psi_cpu_some_pct, 0, 100},
    ThresholdKey{"mem_available_low_pct", &Thresholds::mem_available_low_pct, 0, 100},
    ThresholdKey{"procs_blocked_max", &Thresholds::procs_blocked_max, 0, kInf},
    ThresholdKey{"procs_blocked_min_samples", &Thresholds::procs_blocked_min_samples, 1, 1e6},
    ThresholdKey{"nccl_hang_min_seconds", &Thresholds::nccl_hang_min_seconds, 0, kInf},
    ThresholdKey{"nccl_straggler_min_instances", &Thresholds::nccl_straggler_min_instances, 1, 1e6},
    ThresholdKey{"nccl_straggler_min_share", &Thresholds::nccl_straggler_min_share, 0, 1},
    ThresholdKey{"nccl_busbw_drop_pct", &Thresholds::nccl_busbw_drop_pct, 0, 100},
    ThresholdKey{"nccl_busbw_min_records", &Thresholds::nccl_busbw_min_records, 1, 1e6},
    ThresholdKey{"stale_seconds", &Thresholds::stale_seconds, 0, kInf},
    ThresholdKey{"stale_min_samples", &Thresholds::stale_min_samples, 1, 1e6},
};

std::string range_text(const ThresholdKey& k) {
    std::ostringstream out;
    out << "a number in [" << k.min << ", ";
    if (k.max >= kInf)
        out << "inf)";
    else
        out << k.max << "]";
    return out.str();
}

}  // namespace

std::span<const ThresholdKey> threshold_keys() {
    return kKeys;
}

std::optional<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                           std::string& error) {
    Thresholds t;
    std::set<std::string> seen;
    std::istringstream in(text);
    std::string raw;
    int line_no = 0;
    auto fail = [&](const std::string& why) {
        error = origin + ":" + std::to_string(line_no) + ": " + why;
        return std::nullopt;
    };
    while (std::getline(in, raw)) {
        ++line_no;
        std::string_view line = raw;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        const auto eq = line.find('=');
        if (eq == std::string_view::npos)
            return fail("expected `key = value`, got '" + std::string(line) + "'");
        const std::string key(trim(line.substr(0, eq)));
        const std::string value(trim(line.substr(eq + 1)));
        const ThresholdKey* known = nullptr;
        for (const auto& k : kKeys)
            if (key == k.name) known = &k;
        if (!known) return fail("unknown key '" + key + "'");
        if (!seen.insert(key).second) return fail("key '" + key + "' given twice");
        const auto number = parse_double(value);
        if (!number || *number < known->min || *number > known->max)
            return fail("bad value '" + value + "' for " + key + " (expected " + range_text(*known) + ")");
        t.*(known->member) = *number;
    }
    return t;
}

std::optional<Thresholds> load_thresholds(const std::string& path, std::string& error) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        error = path + ": cannot open: " + std::strerror(errno);
        return std::nullopt;
    }
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) {
        error = path + ": read error";
        return std::nullopt;
    }
    return parse_thresholds(text.str(), path, error);
}

std::vector<std::pair<std::string, double>> thresholds_as_pairs(const Thresholds& t) {
    std::vector<std::pair<std::string, double>> pairs;
    pairs.reserve(kKeys.size());
    for (const auto& k : kKeys) pairs.emplace_back(k.name, t.*(k.member));
    return pairs;
}

}  // namespace stallscope
