// Parsers for the NCCL/RCCL RAS client protocol output (NCCL >= 2.24): the TEXT and JSON `STATUS`
// reports and the MONITOR event stream (2.29+). Formats: research notes sections 1.3-1.5, 1.9.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/nccl.h"

namespace stallscope::nccl {

// libstdc++'s std::regex matches recursively, one stack frame per character: a 100 k-character RAS line
// or a 30 k-character NCCL log line overflows the helper's stack (reproduced, issue 17). Every line goes
// through a regex only when it is at most this long; longer lines are cut (log lines: the facts we match
// come first) or, in RAS reports, skipped (no RAS line we read is anywhere near this long, except the
// missing-ranks list, which is parsed without a regex). 4096 was too many: 4 096 characters of one
// `[^\s:]+` run overflowed 8 MiB of stack in the clang -O0 ASan build (over 2 KiB of frames a character;
// tests/sources/nccl hostile_input_test, 2026-11-28). The longest line a matcher needs is a watchdog
// timeout, ~300 characters with its rank prefix.
inline constexpr std::size_t kMaxRegexLine = 1024;

// "0xcf264af53edbe986" / "cf264af53edbe986" / "0x5a1c0e37b2d94f1" -> 16 lower-case hex digits, no 0x.
std::string normalize_comm_hash(std::string_view hash);

// TEXT report (`STATUS` / `VERBOSE STATUS` without SET FORMAT json). Sets outcome "ok", or
// "parse_error" when no RAS header/section was recognised at all; `partial` when the report stops
// before its Warnings section (server crash or a client deadline mid-report).
NcclRasReport parse_ras_text(std::string_view text);

// JSON report (SET FORMAT json, >= 2.28.7). Repairs the missing comma that 2.28.7/2.28.9 leave after
// "nvml_dev" of a missing rank (the only known invalid output) before giving up with "parse_error".
NcclRasReport parse_ras_json(std::string_view text);
// The repair alone: inserts the comma between a value line and a following "key": line.
std::string repair_ras_json(std::string_view text);

// Picks the parser by the first non-blank byte ('{' -> JSON).
NcclRasReport parse_ras_report(std::string_view text);

// MONITOR stream, text (one event per line) or JSON (concatenated pretty-printed objects). Consumes the
// complete events at the front of `buffer` and leaves an incomplete tail there for the next read; a
// tail longer than kMaxPendingEvent is dropped. Malformed events are skipped and counted in `garbage`.
inline constexpr std::size_t kMaxPendingEvent = 1u << 20;
std::vector<NcclRasEvent> take_monitor_events(std::string& buffer, int& garbage);

// "2.28.9" -> 22809 (major*10000 + minor*100 + patch); 0 when not a version.
int nccl_version_code(std::string_view version);

}  // namespace stallscope::nccl
