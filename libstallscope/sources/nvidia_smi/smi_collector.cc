#include "libstallscope/sources/nvidia_smi/smi_collector.h"

#include "libstallscope/sources/nvidia_smi/smi_csv.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope {

namespace {

constexpr std::size_t kMaxOutputBytes = 256 * 1024;  // 8 GPUs print ~1.5 KiB; anything near this is garbage

// The first line of the tool's output, printable and bounded, to explain a failure.
std::string first_line(const std::string& output) {
    std::string_view line = trim(std::string_view(output).substr(0, output.find('\n')));
    std::string out;
    for (char c : line.substr(0, 120)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return out;
}

std::string describe_failure(const CommandResult& result) {
    std::string why = result.error;
    if (const auto line = first_line(result.output); !line.empty()) why += ": " + line;
    return why;
}

}  // namespace

NvidiaSmiCollector::NvidiaSmiCollector(std::string program, std::chrono::milliseconds timeout)
    : program_(std::move(program)), timeout_(timeout) {}

CommandResult NvidiaSmiCollector::run(const char* fields) {
    return run_bounded_command(
        {program_, std::string("--query-gpu=") + fields, "--format=csv,noheader,nounits"}, timeout_,
        kMaxOutputBytes);
}

CommandResult NvidiaSmiCollector::run_query() {
    return run(legacy_fields_ ? kSmiQueryFieldsLegacy : kSmiQueryFields);
}

bool NvidiaSmiCollector::probe(std::string& why) {
    CommandResult result = run_query();
    // A driver older than 535 rejects the new column name: `Field "clocks_event_reasons.active" is not a
    // valid field to query.` Retry once with the old name and keep it.
    if (result.started && !result.ok() && result.output.find("not a valid field") != std::string::npos) {
        legacy_fields_ = true;
        result = run_query();
    }
    if (!result.ok()) {
        why = describe_failure(result);
        return false;
    }
    first_ = std::move(result);
    return true;
}

void NvidiaSmiCollector::sample(Snapshot& snapshot) {
    CommandResult result = first_ ? std::move(*first_) : run_query();
    first_.reset();
    if (!result.ok()) {
        // Per sample, not once: a wedged or failing nvidia-smi is news every time it happens.
        snapshot.warnings.push_back("nvidia-smi: " + describe_failure(result) +
                                    "; no NVIDIA GPU data this sample");
        return;
    }
    SmiParseResult parsed = parse_nvidia_smi_csv(result.output);
    for (auto& gpu : parsed.gpus) snapshot.gpus.push_back(std::move(gpu));
    for (auto& warning : parsed.warnings)
        if (warned_.insert(warning).second) snapshot.warnings.push_back(std::move(warning));
}

}  // namespace stallscope
