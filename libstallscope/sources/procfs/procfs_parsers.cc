#include "libstallscope/sources/procfs/procfs_parsers.h"

#include <array>
#include <cstdint>
#include <limits>

#include "libstallscope/util/parse_number.h"

namespace stallscope {
namespace {

constexpr std::string_view kSpaces = " \t";

// Next whitespace-separated token of `text`, consumed from it; empty at the end.
std::string_view next_token(std::string_view& text) {
    const auto start = text.find_first_not_of(kSpaces);
    if (start == std::string_view::npos) {
        text = {};
        return {};
    }
    text.remove_prefix(start);
    const auto end = text.find_first_of(kSpaces);
    const auto token = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    return token;
}

Counter counter_field(std::string_view raw, std::string_view file, std::string_view field,
                      Warnings& warnings) {
    auto value = parse_u64(raw);
    if (!value) warnings.push_back(field_warning(file, field, describe_bad_counter(raw)));
    return value;
}

Gauge gauge_field(std::string_view raw, std::string_view file, std::string_view field, Warnings& warnings) {
    auto value = parse_double(raw);
    if (!value) {
        // describe_bad_counter speaks about integers; for a gauge only "empty"/"binary"/"not a number" fit.
        std::string why = describe_bad_counter(raw);
        if (why.rfind("empty", 0) != 0 && why.rfind("binary", 0) != 0)
            why = "not a number '" + std::string(trim(raw).substr(0, 32)) + "'";
        warnings.push_back(field_warning(file, field, why));
    }
    return value;
}

// The value of the first line "<key><spaces><value>" (vmstat, stat) or "<key>:<spaces><value>" (meminfo);
// `key` includes the ':' where the format has one. nullopt when no line has that key.
std::optional<std::string_view> keyed_text(std::string_view text, std::string_view key) {
    std::optional<std::string_view> found;
    for_each_line(text, [&](std::string_view line) {
        if (found || line.size() <= key.size() || line.substr(0, key.size()) != key) return;
        const char after = line[key.size()];
        if (after != ' ' && after != '\t' && key.back() != ':') return;  // "oom_kill" vs "oom_kill_x"
        found = line.substr(key.size());
    });
    return found;
}

}  // namespace

std::string field_warning(std::string_view file, std::string_view field, std::string_view why) {
    std::string w;
    w.reserve(file.size() + field.size() + why.size() + 4);
    w.append(file).append(": ").append(field).append(": ").append(why);
    return w;
}

void parse_loadavg(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings) {
    std::string_view rest = text;
    const std::array<std::pair<Gauge HostStats::*, std::string_view>, 3> fields{
        {{&HostStats::load1, "load1"}, {&HostStats::load5, "load5"}, {&HostStats::load15, "load15"}}};
    for (const auto& [member, name] : fields) {
        const auto token = next_token(rest);
        if (token.empty()) {
            warnings.push_back(field_warning(file, name, "missing"));
            continue;
        }
        out.*member = gauge_field(token, file, name, warnings);
    }
}

void parse_meminfo(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings) {
    const std::array<std::pair<Counter HostStats::*, std::string_view>, 2> fields{
        {{&HostStats::mem_total_bytes, "MemTotal:"}, {&HostStats::mem_available_bytes, "MemAvailable:"}}};
    for (const auto& [member, key] : fields) {
        const auto name = key.substr(0, key.size() - 1);
        auto raw = keyed_text(text, key);
        if (!raw) {
            warnings.push_back(field_warning(file, name, "missing"));
            continue;
        }
        std::string_view value = trim(*raw);
        bool kilobytes = false;
        if (value.size() > 2 && value.substr(value.size() - 2) == "kB") {
            value = trim(value.substr(0, value.size() - 2));
            kilobytes = true;
        }
        auto parsed = counter_field(value, file, name, warnings);
        if (parsed && kilobytes) {
            if (*parsed > std::numeric_limits<std::uint64_t>::max() / 1024) {
                warnings.push_back(field_warning(file, name, "out of range (kB * 1024 > 2^64-1)"));
                parsed.reset();
            } else {
                *parsed *= 1024;
            }
        }
        out.*member = parsed;
    }
}

void parse_stat(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings) {
    const std::array<std::pair<Counter HostStats::*, std::string_view>, 2> fields{
        {{&HostStats::procs_running, "procs_running"}, {&HostStats::procs_blocked, "procs_blocked"}}};
    for (const auto& [member, key] : fields) {
        auto raw = keyed_text(text, key);
        if (!raw) {
            warnings.push_back(field_warning(file, key, "missing"));
            continue;
        }
        out.*member = counter_field(*raw, file, key, warnings);
    }
}

void parse_vmstat(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings) {
    auto raw = keyed_text(text, "oom_kill");
    if (!raw) {
        warnings.push_back(field_warning(file, "oom_kill", "missing (kernel < 4.13?)"));
        return;
    }
    out.oom_kills = counter_field(*raw, file, "oom_kill", warnings);
}

namespace {

struct PsiTargets {
    Gauge* avg10 = nullptr;
    Gauge* avg60 = nullptr;
    Counter* total = nullptr;
};

void parse_psi_line(std::string_view rest, std::string_view file, std::string_view kind,
                    const PsiTargets& targets, Warnings& warnings) {
    bool seen_avg10 = false, seen_avg60 = false, seen_total = false;
    for (auto token = next_token(rest); !token.empty(); token = next_token(rest)) {
        const auto eq = token.find('=');
        if (eq == std::string_view::npos) continue;
        const auto key = token.substr(0, eq);
        const auto value = token.substr(eq + 1);
        const std::string field = std::string(kind) + " " + std::string(key);
        if (key == "avg10") {
            *targets.avg10 = gauge_field(value, file, field, warnings);
            seen_avg10 = true;
        } else if (key == "avg60") {
            *targets.avg60 = gauge_field(value, file, field, warnings);
            seen_avg60 = true;
        } else if (key == "total") {
            *targets.total = counter_field(value, file, field, warnings);
            seen_total = true;
        }
    }
    if (!seen_avg10) warnings.push_back(field_warning(file, std::string(kind) + " avg10", "missing"));
    if (!seen_avg60) warnings.push_back(field_warning(file, std::string(kind) + " avg60", "missing"));
    if (!seen_total) warnings.push_back(field_warning(file, std::string(kind) + " total", "missing"));
}

}  // namespace

void parse_pressure(std::string_view text, std::string_view file, PsiResource resource, Psi& out,
                    Warnings& warnings) {
    if (trim(text).empty()) {
        warnings.push_back(field_warning(file, "some", "empty file"));
        return;
    }
    PsiTargets some, full;
    switch (resource) {
        case PsiResource::cpu:
            some = {&out.cpu_some_avg10, &out.cpu_some_avg60, &out.cpu_some_total_us};
            break;
        case PsiResource::io:
            some = {&out.io_some_avg10, &out.io_some_avg60, &out.io_some_total_us};
            full = {&out.io_full_avg10, &out.io_full_avg60, &out.io_full_total_us};
            break;
        case PsiResource::memory:
            some = {&out.memory_some_avg10, &out.memory_some_avg60, &out.memory_some_total_us};
            full = {&out.memory_full_avg10, &out.memory_full_avg60, &out.memory_full_total_us};
            break;
    }
    bool seen_some = false, seen_full = false;
    for_each_line(text, [&](std::string_view line) {
        std::string_view rest = line;
        const auto kind = next_token(rest);
        if (kind == "some" && !seen_some) {
            seen_some = true;
            parse_psi_line(rest, file, kind, some, warnings);
        } else if (kind == "full" && !seen_full) {
            seen_full = true;
            if (full.avg10) parse_psi_line(rest, file, kind, full, warnings);
        }
    });
    if (!seen_some) warnings.push_back(field_warning(file, "some", "missing line"));
    if (!seen_full && full.avg10) warnings.push_back(field_warning(file, "full", "missing line"));
}

namespace {

constexpr std::array<std::pair<Counter NetInterface::*, std::string_view>, 16> kNetDevColumns{{
    {&NetInterface::rx_bytes, "rx_bytes"},
    {&NetInterface::rx_packets, "rx_packets"},
    {&NetInterface::rx_errors, "rx_errors"},
    {&NetInterface::rx_dropped, "rx_dropped"},
    {&NetInterface::rx_fifo, "rx_fifo"},
    {&NetInterface::rx_frame, "rx_frame"},
    {&NetInterface::rx_compressed, "rx_compressed"},
    {&NetInterface::rx_multicast, "rx_multicast"},
    {&NetInterface::tx_bytes, "tx_bytes"},
    {&NetInterface::tx_packets, "tx_packets"},
    {&NetInterface::tx_errors, "tx_errors"},
    {&NetInterface::tx_dropped, "tx_dropped"},
    {&NetInterface::tx_fifo, "tx_fifo"},
    {&NetInterface::tx_colls, "tx_colls"},
    {&NetInterface::tx_carrier, "tx_carrier"},
    {&NetInterface::tx_compressed, "tx_compressed"},
}};

}  // namespace

void parse_net_dev(std::string_view text, std::string_view file, std::vector<NetInterface>& out,
                   Warnings& warnings) {
    for_each_line(text, [&](std::string_view line) {
        // Header lines ("Inter-|   Receive ...", " face |bytes ...") carry '|' and no ':'.
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            if (!trim(line).empty() && line.find('|') == std::string_view::npos)
                warnings.push_back(field_warning(
                    file, "row", "no interface name in '" + std::string(trim(line).substr(0, 40)) + "'"));
            return;
        }
        const auto name = trim(line.substr(0, colon));
        if (name.empty()) {
            warnings.push_back(field_warning(file, "row", "empty interface name"));
            return;
        }
        NetInterface& iface = out.emplace_back();
        iface.name = std::string(name);
        std::string_view rest = line.substr(colon + 1);
        std::size_t columns = 0;
        for (const auto& [member, column] : kNetDevColumns) {
            const auto token = next_token(rest);
            if (token.empty()) break;
            ++columns;
            iface.*member = parse_u64(token);
            if (!(iface.*member))  // the field name is only built on this error path
                warnings.push_back(
                    field_warning(file, iface.name + " " + std::string(column), describe_bad_counter(token)));
        }
        if (columns < kNetDevColumns.size())
            warnings.push_back(field_warning(
                file, iface.name, "truncated row (" + std::to_string(columns) + " of 16 columns)"));
    });
}

}  // namespace stallscope
