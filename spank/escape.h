// The plugin's one escaping function for job-controlled text (pure; tests/spank). Used for the root-owned
// state file (lossless: unescape() gives the bytes back) and for every job-controlled string that goes to
// slurmd's log or to a user's terminal (shown()): output directories, the summarize child's output,
// scontrol/job reader errors, option values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope::spank {

// '%' and every byte a terminal, a log reader or a line-based parser could act on become %XX (lower-case
// hex): C0 controls (newline included), DEL, bytes that are not part of valid UTF-8 (so raw C1 0x80-0x9f
// too), and the UTF-8 encodings of C1 controls (U+0080-U+009F: CSI, OSC, ... on UTF-8 terminals), of the
// bidi embeddings/overrides/isolates U+202A-U+202E and U+2066-U+2069 (text shown reordered), and of the
// line/paragraph separators U+2028/U+2029. Other valid UTF-8 is kept, so paths stay readable.
std::string escape(std::string_view text);
// Reverses escape() (any %XX is decoded); nullopt on a malformed escape.
std::optional<std::string> unescape(std::string_view text);
// escape() of at most the first `cap` bytes, with "..." when the text was longer: for log lines.
std::string shown(std::string_view text, std::size_t cap = 256);

}  // namespace stallscope::spank
