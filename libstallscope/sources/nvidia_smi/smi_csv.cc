#include "libstallscope/sources/nvidia_smi/smi_csv.h"

#include <cstdint>

#include "libstallscope/sources/nvml/clocks_event_reasons.h"
#include "libstallscope/sources/nvml/pci_bus_id.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope {

namespace {

constexpr std::size_t kColumns = 14;
constexpr std::uint64_t kMiB = 1024 * 1024;

std::vector<std::string_view> split_csv_row(std::string_view line) {
    std::vector<std::string_view> cells;
    for (;;) {
        const auto comma = line.find(',');
        cells.push_back(trim(line.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        line.remove_prefix(comma + 1);
    }
    return cells;
}

bool is_null_marker(std::string_view cell) {
    return cell == "N/A" || (cell.size() >= 2 && cell.front() == '[' && cell.back() == ']');
}

// Printable, bounded copy of a cell for a warning (garbage may be binary or huge).
std::string quoted(std::string_view cell) {
    std::string out = "'";
    for (char c : cell.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (cell.size() > 40) out += "...";
    return out + "'";
}

class RowParser {
  public:
    RowParser(std::string label, std::vector<std::string>& warnings)
        : label_(std::move(label)), warnings_(warnings) {}

    // Null markers are expected ("[Not Supported]" on a board without the sensor) but still named once.
    bool usable(std::string_view cell, const char* field) {
        if (!is_null_marker(cell) && !cell.empty()) return true;
        warnings_.push_back("nvidia-smi: " + label_ + ": " + field + " " + quoted(cell) + " -> null");
        return false;
    }
    Gauge gauge(std::string_view cell, const char* field) {
        if (!usable(cell, field)) return std::nullopt;
        auto value = parse_double(cell);
        if (!value || *value < 0) return bad(cell, field), std::nullopt;
        return value;
    }
    Counter counter(std::string_view cell, const char* field, bool allow_hex = false) {
        if (!usable(cell, field)) return std::nullopt;
        auto value = parse_u64(cell, allow_hex);
        if (!value) return bad(cell, field), std::nullopt;
        return value;
    }
    Counter mebibytes(std::string_view cell, const char* field) {
        auto mib = counter(cell, field);
        if (!mib) return std::nullopt;
        if (*mib > UINT64_MAX / kMiB) return bad(cell, field), std::nullopt;
        return *mib * kMiB;
    }

  private:
    void bad(std::string_view cell, const char* field) {
        warnings_.push_back("nvidia-smi: " + label_ + ": " + field + " " + quoted(cell) +
                            " is not a valid value (" + describe_bad_counter(cell) + ") -> null");
    }
    std::string label_;
    std::vector<std::string>& warnings_;
};

}  // namespace

SmiParseResult parse_nvidia_smi_csv(std::string_view text) {
    SmiParseResult result;
    std::size_t line_number = 0;
    while (!text.empty()) {
        const auto newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        ++line_number;
        if (trim(line).empty()) continue;

        const auto cells = split_csv_row(line);
        if (cells.size() != kColumns) {
            result.warnings.push_back("nvidia-smi: line " + std::to_string(line_number) + ": expected " +
                                      std::to_string(kColumns) + " columns, got " +
                                      std::to_string(cells.size()) + " (" + quoted(line) + "); row skipped");
            continue;
        }
        const auto index = parse_u64(cells[0]);
        if (!index || *index > 1023 || cells[1].empty() || is_null_marker(cells[1])) {
            result.warnings.push_back("nvidia-smi: line " + std::to_string(line_number) +
                                      ": no usable GPU index/uuid (" + quoted(line) + "); row skipped");
            continue;
        }
        Gpu gpu;
        gpu.index = static_cast<int>(*index);
        gpu.vendor = "nvidia";
        gpu.uuid = std::string(cells[1]);
        gpu.name = is_null_marker(cells[3]) ? "" : std::string(cells[3]);
        RowParser row("GPU " + std::to_string(gpu.index), result.warnings);
        if (auto pci = normalize_pci_bus_id(cells[2])) {
            gpu.pci_bus_id = *pci;
        } else {
            result.warnings.push_back("nvidia-smi: GPU " + std::to_string(gpu.index) + ": pci_bus_id " +
                                      quoted(cells[2]) + " is not a PCI bus id");
        }
        gpu.utilization_pct = row.gauge(cells[4], "utilization_pct");
        gpu.memory_used_bytes = row.mebibytes(cells[5], "memory_used_bytes");
        gpu.memory_total_bytes = row.mebibytes(cells[6], "memory_total_bytes");
        gpu.temperature_c = row.gauge(cells[7], "temperature_c");
        gpu.power_w = row.gauge(cells[8], "power_w");
        gpu.power_limit_w = row.gauge(cells[9], "power_limit_w");
        gpu.sm_clock_mhz = row.counter(cells[10], "sm_clock_mhz");
        gpu.max_sm_clock_mhz = row.counter(cells[11], "max_sm_clock_mhz");
        if (auto mask = row.counter(cells[12], "throttle_reasons", /*allow_hex=*/true)) {
            gpu.throttle_reasons_mask = mask;
            gpu.throttle_reasons = decode_clocks_event_reasons(*mask);
        }
        gpu.ecc_uncorrected = row.counter(cells[13], "ecc_uncorrected");
        result.gpus.push_back(std::move(gpu));
    }
    return result;
}

}  // namespace stallscope
