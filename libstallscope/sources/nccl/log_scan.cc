#include "libstallscope/sources/nccl/log_scan.h"

#include <glob.h>

#include <charconv>
#include <cstdint>
#include <regex>

#include "libstallscope/sources/nccl/ras_parse.h"
#include "libstallscope/util/lazy_regex.h"

namespace stallscope::nccl {
namespace {

constexpr std::size_t kMaxLineKept = 400;

// Matcher table of research notes 5.4; every regex tolerates the version shapes of 5.1/5.2.
const LazyRegex kNcclPrefix(
    R"(^(?:\[[^\]]+\] )?([^\s:]+):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?(?:\(\w+\) )?NCCL (WARN|INFO) )");
const LazyRegex kIbWc(
    R"(NET/IB(?:/GIN)?\s?: Got completion from peer (\S+?)(?:<(\d+)>)? with (?:error (\d+)|status=(?:(\w+)\()?(\d+)\)?))");
const LazyRegex kVendorErr(R"(vendor[ _]err[= ](\d+))");
const LazyRegex kHca(R"( hca (\S+))");
const LazyRegex kIbAsync(
    R"(NET/IB : (?:(\S+):(\d+) )?(Got (?:non-fatal )?async (?:error )?event|async fatal event)(.*)$)");
const LazyRegex kWatchdog(
    R"(Watchdog caught collective operation timeout: WorkNCCL\((?:SeqNum=(\d+), )?OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?.*?Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds)");
const LazyRegex kWatchdogStatus(
    R"(failure detected by watchdog at work sequence id: (\d+) PG status: last enqueued work: (-?\d+), last completed work: (-?\d+))");
const LazyRegex kHeartbeat(R"(watchdog got stuck for (\d+) seconds|Heartbeat monitor timed out)");
const LazyRegex kNcclError(R"(NCCL error in: .*?, (.*?), NCCL version (\S+))");
const LazyRegex kTorchRank(R"(^\[rank(\d+)\]:|\[Rank (\d+)\])");

// Digits from a regex group: from_chars, `fallback` when the number does not fit (std::stoll/stoi
// threw on 20 digits, issue 17).
template <typename T>
T parse_number(const std::string& digits, T fallback) {
    T v{};
    if (std::from_chars(digits.data(), digits.data() + digits.size(), v).ec != std::errc()) return fallback;
    return v;
}

bool contains(std::string_view line, std::string_view what) {
    return line.find(what) != std::string_view::npos;
}

}  // namespace

bool classify_log_line(std::string_view view, NcclLogEvent& e) {
    // Cheap substring filters first: a busy INFO log must not pay for seven regexes per line.
    const bool ib = contains(view, "NET/IB");
    const bool watchdog = contains(view, "Watchdog caught collective operation timeout");
    const bool wd_status = contains(view, "failure detected by watchdog");
    const bool heartbeat =
        contains(view, "watchdog got stuck") || contains(view, "Heartbeat monitor timed out");
    const bool nccl_error = contains(view, "NCCL error in:");
    const bool warn = contains(view, "NCCL WARN");
    if (!ib && !watchdog && !wd_status && !heartbeat && !nccl_error && !warn) return false;
    // Cut before any regex (kMaxRegexLine): the facts we match sit at the start of the line.
    const std::string line(view.substr(0, kMaxRegexLine));
    std::smatch m;
    if (std::regex_search(line, m, kNcclPrefix.get())) {
        e.host = m[1];
        e.pid = parse_number<std::int64_t>(m[2].str(), -1);
        e.fields["cuda_dev"] = m[4];
    }
    if (std::regex_search(line, m, kTorchRank.get()))
        e.rank = parse_number<int>(m[1].matched ? m[1].str() : m[2].str(), -1);
    if (ib && std::regex_search(line, m, kIbWc.get())) {
        e.kind = "ib_wc_error";
        e.fields["peer"] = m[1];
        e.fields["status"] = m[3].matched ? m[3].str() : m[5].str();
        if (m[4].matched) e.fields["status_name"] = m[4];
        if (std::regex_search(line, m, kVendorErr.get())) e.fields["vendor_err"] = m[1];
        if (std::regex_search(line, m, kHca.get())) e.fields["hca"] = m[1];
    } else if (ib && std::regex_search(line, m, kIbAsync.get())) {
        e.kind = "ib_async";
        if (m[1].matched) e.fields["hca"] = m[1].str() + "/" + m[2].str();
        e.fields["fatal"] = contains(m[3].str(), "non-fatal") ? "false" : "true";
        const std::string rest = m[4];
        const auto start = rest.find_first_not_of(" :");
        e.fields["event"] = start == std::string::npos ? "" : rest.substr(start);
    } else if (watchdog && std::regex_search(line, m, kWatchdog.get())) {
        e.kind = "pt_watchdog_timeout";
        if (m[1].matched) e.fields["seq"] = m[1];
        e.fields["op"] = m[2];
        if (m[3].matched) e.fields["numel"] = m[3];
        e.fields["timeout_ms"] = m[5];
        e.fields["ran_ms"] = m[6];
    } else if (wd_status && std::regex_search(line, m, kWatchdogStatus.get())) {
        e.kind = "pt_watchdog_status";
        e.fields["seq"] = m[1];
        e.fields["last_enqueued"] = m[2];
        e.fields["last_completed"] = m[3];
    } else if (heartbeat && std::regex_search(line, m, kHeartbeat.get())) {
        e.kind = "pt_heartbeat";
        if (m[1].matched) e.fields["stuck_seconds"] = m[1];
    } else if (nccl_error && std::regex_search(line, m, kNcclError.get())) {
        e.kind = "nccl_error";
        e.fields["error"] = m[1];
        e.fields["nccl_version"] = m[2];
    } else if (warn) {
        e.kind = "nccl_warn";
    } else {
        return false;
    }
    e.line = line.substr(0, kMaxLineKept);
    return true;
}

std::string debug_file_glob(std::string_view pattern, const std::string& host) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        const char c = pattern[++i];
        if (c == 'h')
            out += host.empty() ? "*" : host;
        else if (c == 'p')
            out += '*';
        else if (c == '%')
            out += '%';
        else
            out += '*';  // other conversions NCCL may add: match anything
    }
    return out;
}

std::vector<std::string> split_paths(std::string_view list) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= list.size()) {
        std::size_t comma = list.find(',', pos);
        if (comma == std::string_view::npos) comma = list.size();
        std::string_view item = list.substr(pos, comma - pos);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) out.emplace_back(item);
        pos = comma + 1;
    }
    return out;
}

LogScanner::LogScanner(std::vector<std::string> globs, LogScanLimits limits)
    : globs_(std::move(globs)), limits_(limits) {}

std::vector<NcclLogEvent> LogScanner::scan(std::vector<std::string>& warnings) {
    std::vector<NcclLogEvent> events;
    for (const auto& pattern : globs_) {
        glob_t g{};
        if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0)
            for (std::size_t i = 0; i < g.gl_pathc && files_.size() < limits_.max_files; ++i)
                if (!files_.count(g.gl_pathv[i]))
                    files_.emplace(g.gl_pathv[i], std::make_unique<TailFile>(g.gl_pathv[i], limits_.backlog));
        ::globfree(&g);
    }
    std::size_t budget = limits_.bytes_total;
    int dropped = 0;
    for (auto& [path, tail] : files_) {
        if (budget == 0) break;
        std::vector<std::string> lines;
        const std::uint64_t before = tail->offset();
        const std::string err = tail->read_lines(std::min(budget, limits_.bytes_per_file), lines);
        const std::uint64_t after = tail->offset();
        budget -= std::min<std::uint64_t>(budget, after >= before ? after - before : after);
        if (!err.empty() && reported_[path] != err) warnings.push_back("nccl logs: " + err);
        reported_[path] = err;
        for (const auto& line : lines) {
            NcclLogEvent e;
            if (!classify_log_line(line, e)) continue;
            if (events.size() >= limits_.max_events) {
                ++dropped;
                continue;
            }
            e.file = path;
            events.push_back(std::move(e));
        }
    }
    if (dropped > 0)
        warnings.push_back("nccl logs: " + std::to_string(dropped) +
                           " more matching lines this sample not kept");
    return events;
}

}  // namespace stallscope::nccl
