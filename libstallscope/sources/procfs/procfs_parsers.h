// Pure parsers for the /proc files the procfs source reads. Each takes the file's text and the path
// (only to name it in warnings), fills its part of the snapshot and appends one warning per missing or
// garbage field: the field stays null, never 0 (ARCHITECTURE.md value rule). No I/O, no exceptions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

using Warnings = std::vector<std::string>;

// /proc/loadavg: "0.52 0.58 0.59 2/1234 5678" -> load1, load5, load15.
void parse_loadavg(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings);

// /proc/meminfo: "MemTotal:       2113470560 kB" -> mem_total_bytes, mem_available_bytes (kB * 1024).
void parse_meminfo(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings);

// /proc/stat: "procs_running 3", "procs_blocked 0".
void parse_stat(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings);

// /proc/vmstat: "oom_kill 0" -> oom_kills.
void parse_vmstat(std::string_view text, std::string_view file, HostStats& out, Warnings& warnings);

enum class PsiResource { cpu, io, memory };

// /proc/pressure/{cpu,io,memory}:
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
// Fills the some (and, for io and memory, full) avg10, avg60 and total fields. The "full" line that newer
// kernels print for cpu is ignored (it is always zero at the system level).
void parse_pressure(std::string_view text, std::string_view file, PsiResource resource, Psi& out,
                    Warnings& warnings);

// /proc/net/dev: two header lines, then one row per interface, `lo` included:
//   "    lo: 1234 10 0 0 0 0 0 0 1234 10 0 0 0 0 0 0"
// The name ends at the first ':' (the kernel forbids ':' in interface names); old kernels printed no
// space after it for large counters. A short row keeps the columns it has and is warned about once.
void parse_net_dev(std::string_view text, std::string_view file, std::vector<NetInterface>& out,
                   Warnings& warnings);

// "<file>: <field>: <why>" -- the one format every procfs warning uses.
std::string field_warning(std::string_view file, std::string_view field, std::string_view why);

}  // namespace stallscope
