// Well-formed UTF-8 (RFC 3629), for writers whose readers insist on it: JSON (nlohmann's dump() throws
// on anything else) and the Prometheus text format (node_exporter's textfile collector rejects the whole
// file for one label value that is not UTF-8). Names come from the kernel and users (a netdev, a job name)
// and may be any bytes.
#pragma once

#include <cstddef>
#include <string_view>

namespace stallscope {

// The length of the well-formed UTF-8 sequence of two or more bytes at p (RFC 3629's table: no overlong
// forms, no surrogates, nothing past U+10FFFF: what nlohmann's decoder accepts), or 0.
std::size_t utf8_sequence_length(const char* p, const char* end);

// U+FFFD REPLACEMENT CHARACTER, for a byte that starts no well-formed sequence.
inline constexpr std::string_view kUtf8Replacement = "\xef\xbf\xbd";

}  // namespace stallscope
