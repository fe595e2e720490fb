// NVIDIA Xid lines from the kernel log (pure: text in, struct out) and their severity.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

struct XidLine {
    int code = 0;
    std::string pci_bus_id;  // canonical "00000000:18:00.0" (pci_bus_id.h); the kernel gives no function
    std::string message;     // the rest of the line: "pid=1234, name=python, GPU has fallen off the bus."
};

// Accepts a /dev/kmsg record ("6,1234,5678901,-;NVRM: Xid (PCI:0000:18:00): 79, pid=..., ..."), a dmesg
// line ("[12345.678] NVRM: Xid (PCI:0000:3b:00): 13, ...", also with a "kernel:" syslog prefix), or the
// bare text. Returns nullopt for anything else, including truncated or binary Xid lines.
std::optional<XidLine> parse_xid_line(std::string_view line);

// "critical" | "warning" | "info" for an Xid code; unknown codes are "warning" (never silently info).
const char* classify_xid(int code);

}  // namespace stallscope
