// The writer behind snapshot_json_text.h, in a header so the sample line's parts can be written from more
// than one file (snapshot_json_text*.cc) with its small member functions still inlined in each. Internal
// to libstallscope/model: callers use snapshot_json_text.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/json_text.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope::json_text {

// Appends compact JSON. Each value is written as the JSON type to_json() gives its C++ type (Counter:
// unsigned, Gauge and double: float, int: integer), which is what makes the digits dump()'s. The NCCL
// state alone is still built as a tree by its builder (nccl_json.cc) and written with
// append_compact_json: it is empty in most samples, many small nested objects when not, and one
// definition stays the truth.
//
// It writes through a cursor into `out`, grown ahead of each token (room()) and cut to length when the
// writer goes: std::string's push_back and append are out-of-line calls in libstdc++, one per token, and
// were half of this writer's time on a ~50 KB line.
class TextWriter {
  public:
    explicit TextWriter(std::string& out) : out_(out), used_(out.size()) {}
    ~TextWriter() { out_.resize(used_); }
    TextWriter(const TextWriter&) = delete;
    TextWriter& operator=(const TextWriter&) = delete;

    bool ok() const { return ok_; }

    void open_object() { put('{'); }
    void close_object() { put('}'); }
    void open_array() { put('['); }
    void close_array() { put(']'); }

    // A comma unless this is the first item of its object or array: what was written last tells which.
    void separator() {
        const char last = out_[used_ - 1];
        if (last != '{' && last != '[') put(',');
    }
    // A key known to need no escaping (the writers' own field names).
    void key(std::string_view name) {
        separator();
        char* p = room(name.size() + 3);
        *p++ = '"';
        std::memcpy(p, name.data(), name.size());
        p += name.size();
        *p++ = '"';
        *p++ = ':';
        used_ = static_cast<std::size_t>(p - out_.data());
    }
    // A key from data (a counter, an interface, a collector): escaped.
    void data_key(std::string_view name) {
        separator();
        value(name);
        put(':');
    }
    template <typename T>
    void member(std::string_view name, const T& v) {
        key(name);
        value(v);
    }

    void null() { literal("null"); }
    void value(std::string_view s) {
        if (char* end = write_compact_string(room(max_compact_string_chars(s)), s))
            used_ = static_cast<std::size_t>(end - out_.data());
        else
            ok_ = false;  // the text is not dump()'s: the caller uses the tree
    }
    void value(const std::string& s) { value(std::string_view(s)); }
    void value(const char* s) { value(std::string_view(s)); }
    void value(int v) { number(write_compact_int, v); }
    void value(std::int64_t v) { number(write_compact_int, v); }
    void value(std::uint64_t v) { number(write_compact_uint, v); }
    void value(std::uint32_t v) { number(write_compact_uint, std::uint64_t{v}); }  // a uid: Json's unsigned
    void value(double v) { number(write_compact_float, v); }
    void value(bool v) { literal(v ? std::string_view("true") : std::string_view("false")); }
    template <typename T>
    void value(const std::optional<T>& v) {
        if (v)
            value(*v);
        else
            null();
    }
    template <typename T>
    void value(const std::vector<T>& items) {
        open_array();
        for (const auto& item : items) {
            separator();
            value(item);
        }
        close_array();
    }
    void value(const CounterMap& counters) {
        open_object();
        for (const auto& [name, v] : counters) {
            data_key(name);
            value(v);
        }
        close_object();
    }
    // A tree, through append_compact_json on the string itself (cut to what is written, then extended).
    void value(const Json& tree) {
        out_.resize(used_);
        ok_ = append_compact_json(out_, tree) && ok_;
        used_ = out_.size();
    }
    // An RFC 3339 string: digits and punctuation only, nothing to escape.
    void time_value(double epoch_seconds) {
        out_.resize(used_);
        out_.push_back('"');
        append_rfc3339(out_, epoch_seconds);
        out_.push_back('"');
        used_ = out_.size();
    }

  private:
    // At least n writable bytes at the cursor.
    char* room(std::size_t n) {
        if (out_.size() - used_ < n) grow(used_ + n);
        return out_.data() + used_;
    }
    // First to the capacity the string has (a buffer kept between lines: one fill, no copy), then
    // doubling. resize() zero-fills what it adds, so growing in small steps would fill the line twice.
    [[gnu::noinline]] void grow(std::size_t needed) {
        out_.resize(needed <= out_.capacity() ? out_.capacity()
                                              : std::max(2 * out_.capacity(), needed + 4096));
    }
    void put(char c) {
        *room(1) = c;
        ++used_;
    }
    void literal(std::string_view text) {
        std::memcpy(room(text.size()), text.data(), text.size());
        used_ += text.size();
    }
    template <typename Write, typename T>
    void number(Write write, T v) {
        used_ = static_cast<std::size_t>(write(room(kMaxCompactNumberChars), v) - out_.data());
    }

    std::string& out_;
    std::size_t used_;  // the text's length; out_ beyond it is room
    bool ok_ = true;
};

}  // namespace stallscope::json_text
