// AMD GPUs from <sysfs>/class/drm/card<N>/device (vendor 0x1002). Per-sample files are kept open
// (CounterFile: one pread each); identity (PCI id, unique_id, product name) and the file layout are
// read once, on the first sample.
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/sources/amdgpu/amdgpu_parse.h"
#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/nvml/pci_bus_id.h"
#include "libstallscope/util/counter_file.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope {

namespace {

// An absent directory (no RAS, no hwmon) has no entries.
std::vector<std::string> entries_or_none(const std::string& path) {
    return directory_entries(path).value_or(std::vector<std::string>{});
}

bool file_exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

// "card3" -> 3; connectors ("card0-DP-1") and render nodes are not GPUs.
std::optional<int> card_number(const std::string& name) {
    if (name.size() < 5 || name.compare(0, 4, "card") != 0) return std::nullopt;
    auto number = parse_u64(std::string_view(name).substr(4));
    if (!number || *number > 4096) return std::nullopt;
    return static_cast<int>(*number);
}

struct AmdCard {
    Gpu identity;
    CounterFile busy, vram_used, vram_total, power, power_cap, temperature;
    std::vector<CounterFile> ras;  // ras/*_err_count, summed over blocks
};

class AmdgpuSource final : public Source {
  public:
    explicit AmdgpuSource(const Roots& roots) : drm_dir_(roots.sysfs + "/class/drm") {}
    std::string_view name() const override { return "amdgpu"; }

    void sample(Snapshot& snapshot) override {
        if (!discovered_) discover(snapshot);
        for (auto& card : cards_) {
            Gpu gpu = card.identity;
            if (auto v = read_counter(card.busy, snapshot)) gpu.utilization_pct = static_cast<double>(*v);
            gpu.memory_used_bytes = read_counter(card.vram_used, snapshot);
            gpu.memory_total_bytes = read_counter(card.vram_total, snapshot);
            if (auto v = read_counter(card.power, snapshot))
                gpu.power_w = static_cast<double>(*v) / 1e6;  // uW
            if (auto v = read_counter(card.power_cap, snapshot))
                gpu.power_limit_w = static_cast<double>(*v) / 1e6;
            if (auto v = read_counter(card.temperature, snapshot))
                gpu.temperature_c = static_cast<double>(*v) / 1000.0;  // millidegrees C
            read_ras(card, gpu, snapshot);
            snapshot.gpus.push_back(std::move(gpu));
        }
    }

  private:
    void discover(Snapshot& snapshot) {
        discovered_ = true;
        for (const auto& entry : entries_or_none(drm_dir_)) {
            const auto number = card_number(entry);
            if (!number) continue;
            const std::string dev = drm_dir_ + "/" + entry + "/device";
            if (read_attribute_text(dev + "/vendor") != "0x1002")
                continue;  // NVIDIA, the BMC's ASPEED VGA, ...

            AmdCard card;
            Gpu& id = card.identity;
            id.index = *number;
            id.vendor = "amd";
            std::string error;
            std::string slot;
            if (auto uevent = read_text_file(dev + "/uevent", error, 4096))
                slot = pci_slot_from_uevent(*uevent);
            if (slot.empty()) {
                char target[4096];
                const ssize_t n = ::readlink(dev.c_str(), target, sizeof target - 1);
                if (n > 0) {
                    std::string_view link(target, static_cast<std::size_t>(n));
                    slot = std::string(link.substr(link.rfind('/') + 1));
                }
            }
            if (auto pci = normalize_pci_bus_id(slot))
                id.pci_bus_id = *pci;
            else
                snapshot.warnings.push_back("amdgpu: " + dev + ": no PCI bus id (uevent PCI_SLOT_NAME)");
            id.uuid = read_attribute_text(dev + "/unique_id");
            id.name = read_attribute_text(dev + "/product_name");
            if (id.name.empty()) id.name = "AMD GPU " + read_attribute_text(dev + "/device");

            card.busy = per_sample_file(dev + "/gpu_busy_percent", snapshot);
            card.vram_used = per_sample_file(dev + "/mem_info_vram_used", snapshot);
            card.vram_total = per_sample_file(dev + "/mem_info_vram_total", snapshot);
            find_hwmon(dev, card, snapshot);
            for (const auto& name : entries_or_none(dev + "/ras")) {
                if (name.size() > 10 && name.compare(name.size() - 10, 10, "_err_count") == 0)
                    card.ras.emplace_back(dev + "/ras/" + name);
            }
            cards_.push_back(std::move(card));
        }
    }

    // A file the board lacks is named once, at discovery; its field then stays null without re-reading.
    CounterFile per_sample_file(const std::string& path, Snapshot& snapshot) {
        if (file_exists(path)) return CounterFile(path);
        snapshot.warnings.push_back("amdgpu: " + path + " missing; field left null");
        return CounterFile();
    }

    void find_hwmon(const std::string& dev, AmdCard& card, Snapshot& snapshot) {
        std::string hwmon;
        for (const auto& name : entries_or_none(dev + "/hwmon")) {
            if (name.compare(0, 5, "hwmon") == 0) {
                hwmon = dev + "/hwmon/" + name;
                break;
            }
        }
        if (hwmon.empty()) {
            snapshot.warnings.push_back("amdgpu: " + dev + "/hwmon missing: power and temperature left null");
            return;
        }
        // power1_average (averaged socket power) where the SMU provides it; MI300 has only power1_input.
        const std::string average = hwmon + "/power1_average";
        card.power = per_sample_file(file_exists(average) ? average : hwmon + "/power1_input", snapshot);
        card.power_cap = per_sample_file(hwmon + "/power1_cap", snapshot);  // the enforced limit, uW

        std::vector<std::pair<int, std::string>> sensors;
        for (int n = 1; n <= 9; ++n) {
            const std::string input = hwmon + "/temp" + std::to_string(n) + "_input";
            if (file_exists(input))
                sensors.emplace_back(n, read_attribute_text(hwmon + "/temp" + std::to_string(n) + "_label"));
        }
        if (auto choice = choose_temperature_sensor(sensors)) {
            card.temperature = CounterFile(hwmon + "/temp" + std::to_string(choice->input) + "_input");
        } else {
            snapshot.warnings.push_back("amdgpu: " + hwmon + ": no temp*_input; temperature left null");
        }
    }

    // nullopt for a file that is absent (named at discovery) or holds garbage (named now).
    Counter read_counter(CounterFile& file, Snapshot& snapshot) {
        if (file.path().empty()) return std::nullopt;
        std::string error;
        auto text = file.read(error);
        if (!text) {
            snapshot.warnings.push_back("amdgpu: " + file.path() + ": " + error);
            return std::nullopt;
        }
        auto value = parse_u64(*text);
        if (!value)
            snapshot.warnings.push_back("amdgpu: " + file.path() + ": " + describe_bad_counter(*text));
        return value;
    }

    void read_ras(AmdCard& card, Gpu& gpu, Snapshot& snapshot) {
        if (card.ras.empty()) return;  // RAS not enabled on this board: no ECC counters
        RasErrorCount total;
        for (auto& file : card.ras) {
            std::string error;
            auto text = file.read(error);
            auto count = text ? parse_ras_err_count(*text) : std::nullopt;
            if (!count) {
                // A partial sum would look like a counter reset to the delta code: all blocks or nothing.
                snapshot.warnings.push_back("amdgpu: " + file.path() + ": " +
                                            (text ? "not 'ue: N / ce: N'" : error) +
                                            "; ECC counts left null");
                return;
            }
            total.uncorrected += count->uncorrected;
            total.corrected += count->corrected;
        }
        gpu.ecc_uncorrected = total.uncorrected;
        gpu.ecc_corrected = total.corrected;
    }

    std::string drm_dir_;
    bool discovered_ = false;
    std::vector<AmdCard> cards_;
};

}  // namespace

std::unique_ptr<Source> make_amdgpu_source(const Roots& roots) {
    return std::make_unique<AmdgpuSource>(roots);
}

}  // namespace stallscope
