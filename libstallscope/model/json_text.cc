#include "libstallscope/model/json_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/detail/conversions/to_chars.hpp>

#include "libstallscope/util/utf8.h"

namespace stallscope {
namespace {

// The bytes a string copies as they are: printable ASCII but the quote and the backslash. Everything else
// is an escape or the start of a multi-byte sequence.
constexpr std::array<bool, 256> kPlain = [] {
    std::array<bool, 256> plain{};
    for (int c = 0x20; c < 0x80; ++c) plain[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    return plain;
}();

// Whether the 8 bytes at p are all plain, a word at a time (counter names and keys are mostly plain, and
// the byte loop was most of the line writer's time): no byte with the high bit, none below 0x20, no quote,
// no backslash. Each test is exact about "any byte" (the classic has-zero / has-less bit tricks).
bool eight_plain(const char* p) {
    std::uint64_t x;
    std::memcpy(&x, p, sizeof x);
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
    const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
    const std::uint64_t special = (x & kHighs) | ((x - 0x20 * kOnes) & ~x & kHighs) |
                                  has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\'));
    return special == 0;
}

}  // namespace

// nlohmann's dump_escaped with ensure_ascii off: the short escapes, \u00xx (lower-case hex) for other
// control characters, well-formed UTF-8 and everything else as is. nullptr on ill-formed UTF-8, where
// dump() throws (the rules' messages hold an em dash, so UTF-8 is the common case, not the odd one).
char* write_compact_string(char* out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    *out++ = '"';
    const char* run = s.data();  // the plain characters since the last escape, copied in one go
    const char* const end = s.data() + s.size();
    const auto flush = [&](const char* upto) {
        std::memcpy(out, run, static_cast<std::size_t>(upto - run));
        out += upto - run;
    };
    for (const char* p = run; p != end; ++p) {
        while (end - p >= 8 && eight_plain(p)) p += 8;
        if (p == end) break;
        const auto c = static_cast<unsigned char>(*p);
        if (kPlain[c]) continue;
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence_length(p, end);
            if (n == 0) return nullptr;
            p += n - 1;  // the sequence stays in the run
            continue;
        }
        flush(p);
        run = p + 1;
        *out++ = '\\';
        switch (c) {
            case '\b':
                *out++ = 'b';
                break;
            case '\t':
                *out++ = 't';
                break;
            case '\n':
                *out++ = 'n';
                break;
            case '\f':
                *out++ = 'f';
                break;
            case '\r':
                *out++ = 'r';
                break;
            case '"':
            case '\\':
                *out++ = static_cast<char>(c);
                break;
            default:
                std::memcpy(out, "u00", 3);
                out[3] = kHex[c >> 4];
                out[4] = kHex[c & 15];
                out += 5;
        }
    }
    flush(end);
    *out++ = '"';
    return out;
}

char* write_compact_float(char* out, double v) {
    if (!std::isfinite(v)) {
        std::memcpy(out, "null", 4);
        return out + 4;
    }
    return nlohmann::detail::to_chars(out, out + kMaxCompactNumberChars, v);
}

char* write_compact_int(char* out, std::int64_t v) {
    return std::to_chars(out, out + kMaxCompactNumberChars, v).ptr;
}

char* write_compact_uint(char* out, std::uint64_t v) {
    return std::to_chars(out, out + kMaxCompactNumberChars, v).ptr;
}

namespace {

bool append_escaped(std::string& out, std::string_view s) {
    const std::size_t old = out.size();
    out.resize(old + max_compact_string_chars(s));
    char* const end = write_compact_string(out.data() + old, s);
    out.resize(end ? static_cast<std::size_t>(end - out.data()) : old);
    return end != nullptr;
}

template <typename Write, typename T>
void append_number(std::string& out, Write write, T v) {
    char buf[kMaxCompactNumberChars];
    out.append(buf, static_cast<std::size_t>(write(buf, v) - buf));
}

}  // namespace

bool append_compact_json(std::string& out, const Json& value) {
    switch (value.type()) {
        case Json::value_t::object: {
            out.push_back('{');
            bool first = true;
            for (const auto& [key, item] :
                 static_cast<const Json::object_t::Container&>(value.get_ref<const Json::object_t&>())) {
                if (!first) out.push_back(',');
                first = false;
                if (!append_escaped(out, key)) return false;
                out.push_back(':');
                if (!append_compact_json(out, item)) return false;
            }
            out.push_back('}');
            return true;
        }
        case Json::value_t::array: {
            out.push_back('[');
            bool first = true;
            for (const auto& item : value.get_ref<const Json::array_t&>()) {
                if (!first) out.push_back(',');
                first = false;
                if (!append_compact_json(out, item)) return false;
            }
            out.push_back(']');
            return true;
        }
        case Json::value_t::string:
            return append_escaped(out, value.get_ref<const std::string&>());
        case Json::value_t::boolean:
            out.append(value.get<bool>() ? "true" : "false");
            return true;
        case Json::value_t::number_integer:
            append_number(out, write_compact_int, value.get<std::int64_t>());
            return true;
        case Json::value_t::number_unsigned:
            append_number(out, write_compact_uint, value.get<std::uint64_t>());
            return true;
        case Json::value_t::number_float:
            append_number(out, write_compact_float, value.get<double>());
            return true;
        case Json::value_t::null:
            out.append("null");
            return true;
        default:  // binary, discarded
            return false;
    }
}

}  // namespace stallscope
