#include "libstallscope/timeline/json_text.h"

#include <charconv>
#include <cmath>
#include <nlohmann/detail/conversions/to_chars.hpp>

namespace stallscope {
namespace {

// nlohmann's dump_escaped with ensure_ascii off, for ASCII text: the short escapes, \u00xx (lower-case
// hex) for other control characters, everything else as is.
bool append_escaped(std::string& out, const std::string& s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    const char* run = s.data();  // the plain characters since the last escape, appended in one go
    const char* const end = s.data() + s.size();
    for (const char* p = run; p != end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) continue;
        if (c >= 0x80) return false;
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
        case Json::value_t::number_float: {
            const double v = value.get<double>();
            if (!std::isfinite(v)) {
                out.append("null");
                return true;
            }
            char buf[64];
            const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
            out.append(buf, static_cast<std::size_t>(end - buf));
            return true;
        }
        case Json::value_t::null:
            out.append("null");
            return true;
        default:  // binary, discarded
            return false;
    }
}

}  // namespace stallscope
