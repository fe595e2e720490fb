// The v2 change record a timeline is mostly made of, {"type":"sample","a":[...],"g":[...]} (the listed
// counters' differences and gauges' values, snapshot_diff.h), read with simdjson's On Demand API: its
// numbers straight into two vectors, without the DOM's tape (building the tape and reading it back was
// ~17 % of a dgx-h100 replay, bench/RESULTS.md).
//
// Anything else, or anything not exactly so, is not taken: the reader then reads the line with the DOM
// as before, so every warning and every odd line (a repeated key, a big number, trailing bytes) keeps
// the DOM's answer. This only saves work on lines the DOM would read the same way.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace stallscope {

struct PlainRecord {
    std::vector<std::int64_t> a;  // "a": every element an integer that fits int64
    std::vector<double> g;        // "g": every element a number
    bool has_a = false;           // a JSON plain record always has "a"; a binary one may not
    bool has_g = false;
};

// True when `text` (followed by `padding` readable bytes, >= SIMDJSON_PADDING) is exactly one object
// with "type":"sample", an "a" array and optionally a "g" array, each key once, in any order, nothing
// after it; `out` then holds the arrays. False (and `out` unspecified) for anything else.
bool read_plain_record(simdjson::ondemand::parser& parser, std::string_view text, std::size_t padding,
                       PlainRecord& out);

// The same arrays as the DOM reads them, for a record read with it ("keys" and "a" in one line, ...):
// false at the first element that is not an int64 (dom_integers) or a number (dom_numbers).
bool dom_integers(simdjson::dom::array list, std::vector<std::int64_t>& out);
bool dom_numbers(simdjson::dom::array list, std::vector<double>& out);

}  // namespace stallscope
