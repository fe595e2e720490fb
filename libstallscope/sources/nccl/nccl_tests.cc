#include "libstallscope/sources/nccl/nccl_tests.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "libstallscope/sources/nvidia_smi/bounded_command.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope::nccl {
namespace {

constexpr std::size_t kMaxOutput = 4u << 20;

std::vector<std::string> words(std::string_view line) {
    std::vector<std::string> out;
    std::istringstream in{std::string(line)};
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// One busbw/#wrong pair of a data row; #wrong is "N/A" with -c 0.
void take_half(NcclTestResult& r, const std::vector<std::string>& w, std::size_t at, std::uint64_t size,
               bool& wrong_known) {
    if (at + 3 >= w.size()) return;
    const auto busbw = parse_double(w[at + 2]);
    if (busbw && (!r.peak_busbw_gbs || *busbw > *r.peak_busbw_gbs)) {
        r.peak_busbw_gbs = *busbw;
        r.peak_size_bytes = size;
    }
    if (const auto wrong = parse_u64(w[at + 3])) {
        r.wrong = r.wrong.value_or(0) + *wrong;
        wrong_known = true;
    }
}

bool executable_on_path(const std::string& program) {
    if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
        const auto colon = dirs.find(':');
        const std::string dir(dirs.substr(0, colon));
        if (::access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
        if (colon == std::string_view::npos) break;
        dirs.remove_prefix(colon + 1);
    }
    return false;
}

}  // namespace

NcclTestResult parse_nccl_tests_output(std::string_view text) {
    NcclTestResult r;
    bool footer = false, wrong_known = false;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.rfind("# Avg bus bandwidth", 0) == 0) {
            const auto colon = line.find(':');
            const auto w = words(colon == std::string_view::npos ? "" : line.substr(colon + 1));
            if (!w.empty()) r.avg_busbw_gbs = parse_double(w[0]);
            footer = r.avg_busbw_gbs.has_value();
            continue;
        }
        if (line.find("Test NCCL failure") != std::string_view::npos ||
            line.find("Test CUDA failure") != std::string_view::npos ||
            line.find("Test timeout") != std::string_view::npos) {
            r.errors.emplace_back(line.substr(0, 400));
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        // size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong [timestamp]
        const auto w = words(line);
        const auto size = w.empty() ? std::nullopt : parse_u64(w[0]);
        if (!size || w.size() < 13 || !parse_u64(w[1])) continue;
        ++r.rows;
        take_half(r, w, 5, *size, wrong_known);
        take_half(r, w, 9, *size, wrong_known);
    }
    if (!wrong_known) r.wrong.reset();
    if (r.rows == 0 && !footer && r.errors.empty()) r.outcome = "garbage";
    return r;
}

NcclTestResult parse_nccl_tests_json(std::string_view text) {
    using nlohmann::json;
    NcclTestResult r;
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
        r.outcome = "garbage";
        return r;
    }
    bool wrong_known = false;
    for (const auto& row : doc["results"]) {
        if (!row.is_object() || !row.contains("size") || !row["size"].is_number_unsigned()) continue;
        ++r.rows;
        const auto size = row["size"].get<std::uint64_t>();
        for (const char* half : {"out_of_place", "in_place"}) {
            if (!row.contains(half) || !row[half].is_object()) continue;  // null when not run
            const json& h = row[half];
            if (h.contains("bus_bw") && h["bus_bw"].is_number()) {
                const double bw = h["bus_bw"].get<double>();
                if (!r.peak_busbw_gbs || bw > *r.peak_busbw_gbs) {
                    r.peak_busbw_gbs = bw;
                    r.peak_size_bytes = size;
                }
            }
            // null with -c 0; a negative or > 2^53 count is garbage (and casting it would be UB).
            if (h.contains("nwrong") && h["nwrong"].is_number() && h["nwrong"].get<double>() >= 0 &&
                h["nwrong"].get<double>() <= 9007199254740992.0) {
                r.wrong = r.wrong.value_or(0) + static_cast<std::uint64_t>(h["nwrong"].get<double>());
                wrong_known = true;
            }
        }
    }
    if (!wrong_known) r.wrong.reset();
    if (auto avg = doc.find("average_bus_bandwidth"); avg != doc.end() && avg->is_object())
        if (auto bw = avg->find("bandwidth"); bw != avg->end() && bw->is_number())
            r.avg_busbw_gbs = bw->get<double>();
    if (auto errs = doc.find("errors"); errs != doc.end() && errs->is_array())
        for (const auto& e : *errs)
            if (e.is_string() && !e.get<std::string>().empty()) r.errors.push_back(e.get<std::string>());
    return r;
}

const char* nccl_tests_exit_outcome(int exit_code) {
    switch (exit_code) {
        case 0:
            return "ok";
        case 2:
            return "cuda_error";
        case 3:
            return "nccl_error";
        case 4:
            return "timeout";
        case 5:
        case 6:
            return "usage_error";
        case 7:
            return "wrong_data";  // #wrong > 0, out-of-bounds values, or busbw below NCCL_TESTS_MIN_BW
        default:
            return "failed";
    }
}

std::vector<std::string> default_nccl_test_args() {
    return {"-b", "32M", "-e", "256M", "-f", "2", "-g", "1", "-n", "20", "-w", "5"};
}

std::vector<std::string> split_args(std::string_view text) {
    return words(text);
}

NcclTestResult run_nccl_test(const std::string& program, const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout) {
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    if (!executable_on_path(program)) {
        NcclTestResult r;
        r.outcome = "not_found";
        r.command = command;
        r.errors.push_back(program + ": not found on PATH");
        return r;
    }
    const auto started = std::chrono::steady_clock::now();
    const CommandResult run = run_bounded_command(argv, timeout, kMaxOutput);
    NcclTestResult r = parse_nccl_tests_output(run.output);
    r.command = command;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    r.exit_code = run.exit_status;
    if (!run.started) {
        r.outcome = "not_found";
        r.errors.push_back(run.error);
    } else if (run.timed_out) {
        r.outcome = "timeout";
        r.errors.push_back("killed after " + std::to_string(timeout.count() / 1000) + " s");
    } else if (run.exit_status != 0 || run.term_signal != 0) {
        r.outcome = run.term_signal ? "failed" : nccl_tests_exit_outcome(run.exit_status);
        if (!run.error.empty()) r.errors.push_back(run.error);
    } else if (r.wrong && *r.wrong > 0) {
        r.outcome = "wrong_data";
    } else if (r.outcome != "garbage") {
        r.outcome = "ok";
    }
    return r;
}

}  // namespace stallscope::nccl
