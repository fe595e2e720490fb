// One /proc parser per target binary: meson builds this file once per PROCFS_TARGET (1 loadavg, 2 meminfo,
// 3 stat, 4 vmstat, 5 pressure, 6 net_dev), so each parser gets its own corpus and coverage figure.
#include "libstallscope/sources/procfs/procfs_parsers.h"
#include "tests/fuzz/fuzz_input.h"

using namespace stallscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    Warnings warnings;
    [[maybe_unused]] HostStats host;  // unused by the pressure and net/dev parsers
#if PROCFS_TARGET == 1
    parse_loadavg(text, "/proc/loadavg", host, warnings);
#elif PROCFS_TARGET == 2
    parse_meminfo(text, "/proc/meminfo", host, warnings);
    // Values are bytes from kB: a multiple of 1024 unless the line had no "kB" unit.
#elif PROCFS_TARGET == 3
    parse_stat(text, "/proc/stat", host, warnings);
#elif PROCFS_TARGET == 4
    parse_vmstat(text, "/proc/vmstat", host, warnings);
#elif PROCFS_TARGET == 5
    for (const auto resource : {PsiResource::cpu, PsiResource::io, PsiResource::memory}) {
        Psi psi;
        parse_pressure(text, "/proc/pressure/x", resource, psi, warnings);
    }
#elif PROCFS_TARGET == 6
    std::vector<NetInterface> interfaces;
    parse_net_dev(text, "/proc/net/dev", interfaces, warnings);
    for (const auto& iface : interfaces) {
        FUZZ_CHECK(!iface.name.empty());
        FUZZ_CHECK(iface.name.find(':') == std::string::npos);
    }
#else
#error "PROCFS_TARGET must be 1..6"
#endif
    for (const auto& w : warnings) FUZZ_CHECK(!w.empty());
    return 0;
}
