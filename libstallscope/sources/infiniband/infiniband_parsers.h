// Pure parsers for <sysfs>/class/infiniband/<dev>/ports/<N>/ attribute text. No I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

// state "4: ACTIVE\n" -> "ACTIVE"; phys_state "5: LinkUp\n" -> "LinkUp". Text without a numeric prefix
// is returned trimmed; empty or binary text gives nullopt.
std::optional<std::string> parse_port_state(std::string_view text);

// rate "400 Gb/sec (4X NDR)\n" -> 400, "2.5 Gb/sec (1X SDR)" -> 2.5. nullopt unless the text is a
// number followed by "Gb/sec".
Gauge parse_rate_gbps(std::string_view text);

// The PMA data counters count 4-byte words ("per lane, 4 lanes" in node_exporter's words): bytes =
// words * 4. Null stays null; a product above 2^64-1 is null too (it cannot be a byte count).
Counter data_words_to_bytes(Counter words);

// "N/A (no PMA)": the port has no performance management agent; the value will never be a number.
bool is_no_pma(std::string_view text);

}  // namespace stallscope
