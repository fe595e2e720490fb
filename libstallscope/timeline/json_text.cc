#include "libstallscope/timeline/json_text.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <nlohmann/detail/conversions/to_chars.hpp>

namespace stallscope {
namespace {

// The length of the well-formed UTF-8 sequence of two or more bytes at p (RFC 3629's table: no overlong
// forms, no surrogates, nothing past U+10FFFF: what nlohmann's decoder accepts), or 0.
std::size_t utf8_sequence_length(const char* p, const char* end) {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
    const auto left = static_cast<std::size_t>(end - p);
    const unsigned char lead = at(0);
    std::size_t n;
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range, narrower after some leads
    if (lead >= 0xc2 && lead <= 0xdf) {
        n = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        n = 3;
        if (lead == 0xe0) low = 0xa0;
        if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        n = 4;
        if (lead == 0xf0) low = 0x90;
        if (lead == 0xf4) high = 0x8f;
    } else {
        return 0;
    }
    if (left < n || at(1) < low || at(1) > high) return 0;
    for (std::size_t i = 2; i < n; ++i)
        if (at(i) < 0x80 || at(i) > 0xbf) return 0;
    return n;
}

// nlohmann's dump_escaped with ensure_ascii off: the short escapes, \u00xx (lower-case hex) for other
// control characters, well-formed UTF-8 and everything else as is. False on ill-formed UTF-8, where
// dump() throws (the rules' messages hold an em dash, so UTF-8 is the common case, not the odd one).
bool append_escaped(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    const char* run = s.data();  // the plain characters since the last escape, appended in one go
    const char* const end = s.data() + s.size();
    for (const char* p = run; p != end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) continue;
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence_length(p, end);
            if (n == 0) return false;
            p += n - 1;  // the sequence stays in the run
            continue;
        }
        out.append(run, p);
        run = p + 1;
        switch (c) {
            case '\b':
                out.append("\\b");
                break;
            case '\t':
                out.append("\\t");
                break;
            case '\n':
                out.append("\\n");
                break;
            case '\f':
                out.append("\\f");
                break;
            case '\r':
                out.append("\\r");
                break;
            case '"':
                out.append("\\\"");
                break;
            case '\\':
                out.append("\\\\");
                break;
            default:
                out.append("\\u00");
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 15]);
        }
    }
    out.append(run, end);
    out.push_back('"');
    return true;
}

template <typename Integer>
void append_integer(std::string& out, Integer v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace

bool append_compact_string(std::string& out, std::string_view s) {
    return append_escaped(out, s);
}

void append_compact_float(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out.append("null");
        return;
    }
    char buf[64];
    const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(end - buf));
}

void append_compact_int(std::string& out, std::int64_t v) {
    append_integer(out, v);
}

void append_compact_uint(std::string& out, std::uint64_t v) {
    append_integer(out, v);
}

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
            append_integer(out, value.get<std::int64_t>());
            return true;
        case Json::value_t::number_unsigned:
            append_integer(out, value.get<std::uint64_t>());
            return true;
        case Json::value_t::number_float:
            append_compact_float(out, value.get<double>());
            return true;
        case Json::value_t::null:
            out.append("null");
            return true;
        default:  // binary, discarded
            return false;
    }
}

}  // namespace stallscope
