// Terminal-safe text, the one implementation for every text sink of the CLI (stdout views, every
// `stallscope: ...` stderr line, jobs, compare, replay, export warnings). Names, reasons, paths and job
// comments come from files and fields the job user writes; printed raw, an ESC or a C1 CSI/OSC sequence
// would drive the admin's terminal, and a bidi override would reorder what the admin reads
// (Trojan-Source style).
#pragma once

#include <string>
#include <string_view>

namespace stallscope {

// C0 controls (newline included), DEL, bytes that start no well-formed UTF-8 sequence (raw C1 0x80-0x9f
// among them: an 8-bit terminal acts on them), UTF-8-encoded C1 (U+0080-U+009F) and the bidi embeddings,
// overrides and isolates (U+202A-U+202E, U+2066-U+2069) become \xNN per byte; everything else is kept.
std::string printable(std::string_view text);

// printable() of each line, the '\n' between lines kept: for a multi-line view (compare, replay).
std::string printable_lines(std::string_view text);

// U+202A-U+202E and U+2066-U+2069, given a well-formed sequence of `length` bytes at p.
bool is_bidi_control(const char* p, std::size_t length);

}  // namespace stallscope
