// The binary change record of stallscope.timeline/3: the plain record {"type":"sample","a":[...],"g":[...]}
// (snapshot_diff.h) with its numbers as bytes instead of decimal text. Most of a timeline is that record,
// so this is where replay spends its time: parsing ~1 100 digits a dgx-h100 sample as JSON was ~1.2 µs,
// and decompressing the text ~1.8 µs (bench/RESULTS.md, "Study: a binary change record").
//
//   0x1e  flags  [count  delta...]  [count  gauge...]  '\n'
//
// - flags: 1 = "a" follows, 2 = "g" follows (after "a"); other bits make the record invalid.
// - count: how many numbers follow; delta: the zigzag of a signed difference (0 -> 0, -1 -> 1, 1 -> 2 ...).
// - gauge: a tag, then the value. Tag 0..22: that many fraction digits, then the zigzag of the decimal
//   mantissa (612.25 is tag 2, mantissa 61225; |mantissa| < 10^18), read back correctly rounded. The
//   writer uses it when the shortest round-trip text of the double has no exponent and it reads back as
//   that double. Tag 23: the double's 64 bits as a number, for everything else (-0, 1e+300, 5e-324).
//   Decimals compress: a gauge moves in its last digits. A gauge is finite, as in JSON's "g".
// - every number above (flags, counts, tags, values) is a varint whose bytes are never '\n', so the record
//   is a line like any other: torn tails, damaged frames and line numbers work as for JSON lines.
//   The varint: the number's remainder by 127 is its last byte (0..126, with 10..126 written as 11..127),
//   the quotient goes before it in 7-bit groups, least significant first, each with the top bit set.
//
// The record carries no pointers: "keys" and "gkeys" of an earlier JSON record name what "a" and "g"
// hold, exactly as for the JSON plain record. The writer writes a JSON record whenever a list or a "set"
// changes; `zstdcat FILE | grep -a '^{' | jq` shows those, `stallscope export FILE` every sample whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "libstallscope/timeline/plain_record.h"

namespace stallscope {

inline constexpr char kBinaryRecordMarker = 0x1e;  // ASCII "record separator": no JSON line starts so
inline constexpr unsigned kBinaryRecordHasA = 1, kBinaryRecordHasG = 2;

void append_record_varint(std::string& out, std::uint64_t value);
void append_record_delta(std::string& out, std::int64_t delta);
void append_record_gauge(std::string& out, double value);

// True when `text` (one line, without its '\n') is exactly one well-formed binary record; `out` then
// holds its numbers (out.a when out.has_a, out.g when out.has_g: a list the record lacks keeps
// whatever it held). False (`out` unspecified) for anything else, a torn record included.
bool read_binary_record(std::string_view text, PlainRecord& out);

}  // namespace stallscope
