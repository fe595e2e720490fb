#include "libstallscope/sources/kmsg/xid_parser.h"

#include <algorithm>
#include <charconv>

#include "libstallscope/sources/nvml/pci_bus_id.h"
#include "libstallscope/util/parse_number.h"

namespace stallscope {

std::optional<XidLine> parse_xid_line(std::string_view line) {
    // Kernel log text is printable ASCII (kmsg escapes the rest as \xNN): anything else is garbage.
    if (std::any_of(line.begin(), line.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return (u < 0x20 && c != '\t') || u == 0x7f;
        }))
        return std::nullopt;
    constexpr std::string_view kMarker = "NVRM: Xid (";
    const auto at = line.find(kMarker);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(at + kMarker.size());

    // "PCI:0000:18:00): 79, ..." -- the id may be followed by more words in MIG/vGPU builds
    // ("PCI:0000:18:00 GPU-I:01)"), so the id ends at the first space or ')'.
    const auto close = rest.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view inside = rest.substr(0, close);
    std::string_view id = inside.substr(0, inside.find(' '));
    auto pci = normalize_pci_bus_id(id);
    if (!pci) return std::nullopt;
    rest.remove_prefix(close + 1);
    if (rest.substr(0, 2) != ": ") return std::nullopt;
    rest.remove_prefix(2);

    int code = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), code);
    if (ec != std::errc() || code <= 0 || code > 65535) return std::nullopt;
    rest.remove_prefix(static_cast<std::size_t>(ptr - rest.data()));
    // The code is followed by ", <details>" or ends the line; "79abc" is not an Xid.
    if (!rest.empty() && rest.front() != ',') return std::nullopt;
    if (!rest.empty()) rest.remove_prefix(1);

    XidLine xid;
    xid.code = code;
    xid.pci_bus_id = *pci;
    xid.message = std::string(trim(rest));
    return xid;
}

// Severity table. Sources, node-health-anchors.md:
//  - critical: GPUd's "Fatal" groups (section 1.3: REBOOT_SYSTEM / HARDWARE_INSPECTION, taken from
//    leptonai/gpud xid/xid.go) -- the GPU needs a reset, reboot or inspection, or the job's process died;
//    plus 109 and 136, which section 6 proposes as FAIL_RISK (NVIDIA: RESET_GPU) although GPUd says Warning.
//  - info: GPUd's "Info" group (section 1.3); plus 63 (row-remap recording event, NVIDIA: IGNORE) and 43
//    (GPU stopped processing, NVIDIA: IGNORE), which section 6 lowers from GPUd's Fatal/Warning to info.
//  - warning: GPUd's "Warning" groups (13, 31, 45, 92, NVLink5 144-151, ...) and every code not listed.
const char* classify_xid(int code) {
    static constexpr int kCritical[] = {
        // Fatal, [REBOOT_SYSTEM, HARDWARE_INSPECTION] (63 moved to info, see above)
        32, 38, 44, 48, 62, 64, 65, 68, 69, 74, 79, 95, 110, 119, 120, 121, 123, 140,
        // Fatal, [REBOOT_SYSTEM]
        9, 12, 16, 18, 19, 26, 27, 28, 29, 30, 33, 34, 35, 36, 42, 46, 47, 59, 60, 61, 78,
        // Fatal, [HARDWARE_INSPECTION]; Fatal, [REBOOT_SYSTEM, IGNORE] (94: contained ECC, app killed)
        81, 143, 94,
        // section 6 proposal: FAIL_RISK
        109, 136};
    static constexpr int kInfo[] = {152, 153, 157, 161, 162, 164, 165, 63, 43};
    if (std::find(std::begin(kCritical), std::end(kCritical), code) != std::end(kCritical)) return "critical";
    if (std::find(std::begin(kInfo), std::end(kInfo), code) != std::end(kInfo)) return "info";
    return "warning";
}

}  // namespace stallscope
