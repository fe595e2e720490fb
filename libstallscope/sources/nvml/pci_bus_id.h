// PCI bus ids as the GPU tools spell them, made comparable. One canonical form for Snapshot::Gpu::
// pci_bus_id: NVML's busId, "00000000:18:00.0" (8 hex digit domain, upper-case hex as NVML and
// nvidia-smi print it, so it joins with dcgm-exporter's pci_bus_id label).
//
// Accepted spellings: "00000000:18:00.0" (NVML v3, nvidia-smi), "0000:18:00.0" (Linux sysfs, NVML
// busIdLegacy, amdgpu PCI_SLOT_NAME), "PCI:0000:18:00" (NVIDIA kernel log: no function), "18:00.0" (lspci
// short form, domain 0). Case-insensitive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

struct PciAddress {
    std::uint32_t domain = 0;
    std::uint8_t bus = 0, device = 0;
    std::optional<std::uint8_t> function;  // absent in the kernel-log form
};

std::optional<PciAddress> parse_pci_bus_id(std::string_view text);

// "00000000:18:00.0"; a missing function is written as 0 (GPUs are function 0).
std::string format_pci_bus_id(const PciAddress& address);

// The canonical form of `text`, or nullopt when it is not a PCI bus id.
std::optional<std::string> normalize_pci_bus_id(std::string_view text);

// Same domain, bus and device; functions compared only when both sides have one. So "PCI:0000:18:00"
// matches "00000000:18:00.0".
bool same_pci_device(const PciAddress& a, const PciAddress& b);
bool same_pci_device(std::string_view a, std::string_view b);

}  // namespace stallscope
