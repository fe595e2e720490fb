#include "libstallscope/util/printable.h"

#include "libstallscope/util/utf8.h"

namespace stallscope {
namespace {

void append_escaped(std::string& out, const char* p, std::size_t length) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < length; ++i) {
        const auto c = static_cast<unsigned char>(p[i]);
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
}

}  // namespace

bool is_bidi_control(const char* p, std::size_t length) {
    if (length != 3 || static_cast<unsigned char>(p[0]) != 0xe2) return false;
    const auto b1 = static_cast<unsigned char>(p[1]), b2 = static_cast<unsigned char>(p[2]);
    return (b1 == 0x80 && b2 >= 0xaa && b2 <= 0xae) ||  // U+202A-U+202E: LRE RLE PDF LRO RLO
           (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9);    // U+2066-U+2069: LRI RLI FSI PDI
}

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    const char* p = text.data();
    const char* const end = p + text.size();
    while (p < end) {
        const auto c = static_cast<unsigned char>(*p);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
            ++p;
            continue;
        }
        const std::size_t n = c < 0x80 ? 0 : utf8_sequence_length(p, end);
        // U+0080-U+009F is 0xc2 0x80-0x9f in UTF-8: the C1 controls a UTF-8 terminal acts on.
        const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(p[1]) <= 0x9f;
        if (n == 0 || c1 || is_bidi_control(p, n)) {
            append_escaped(out, p, n == 0 ? 1 : n);
            p += n == 0 ? 1 : n;
        } else {
            out.append(p, n);
            p += n;
        }
    }
    return out;
}

std::string printable_lines(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const auto newline = text.find('\n');
        out += printable(text.substr(0, newline));
        if (newline == std::string_view::npos) break;
        out += '\n';
        text.remove_prefix(newline + 1);
    }
    return out;
}

}  // namespace stallscope
