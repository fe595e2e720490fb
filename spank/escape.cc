#include "spank/escape.h"

namespace stallscope::spank {

namespace {

void append_hex(std::string& out, unsigned char byte) {
    static const char* hex = "0123456789abcdef";
    out += '%';
    out += hex[byte >> 4];
    out += hex[byte & 15];
}

// Length of the valid UTF-8 sequence at text[i] and its code point; 0 when the bytes there are not one
// (stray continuation byte, overlong form, surrogate, above U+10FFFF, cut short).
std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t* code_point) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char lead = byte(0);
    std::size_t length;
    char32_t cp;
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
        cp = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        cp = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        cp = lead & 0x07;
    } else {
        return 0;
    }
    if (i + length > text.size()) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(k) & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (byte(k) & 0x3f);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *code_point = cp;
    return length;
}

bool acts_on_display(char32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) ||      // C1 controls
           (cp >= 0x202a && cp <= 0x202e) ||  // LRE RLE PDF LRO RLO
           (cp >= 0x2066 && cp <= 0x2069) ||  // LRI RLI FSI PDI
           cp == 0x2028 || cp == 0x2029;      // line / paragraph separator
}

}  // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto ch = static_cast<unsigned char>(text[i]);
        if (ch < 0x80) {
            if (ch == '%' || ch < 0x20 || ch == 0x7f)
                append_hex(out, ch);
            else
                out += static_cast<char>(ch);
            ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t length = utf8_sequence(text, i, &cp);
        if (length == 0) {
            append_hex(out, ch);  // not UTF-8: raw C1 and any other stray byte
            ++i;
            continue;
        }
        for (std::size_t k = 0; k < length; ++k) {
            if (acts_on_display(cp))
                append_hex(out, static_cast<unsigned char>(text[i + k]));
            else
                out += text[i + k];
        }
        i += length;
    }
    return out;
}

std::optional<std::string> unescape(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        unsigned byte = 0;
        for (int k = 1; k <= 2; ++k) {
            const char c = text[i + k];
            const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
            if (d < 0) return std::nullopt;
            byte = byte * 16 + static_cast<unsigned>(d);
        }
        out += static_cast<char>(byte);
        i += 2;
    }
    return out;
}

std::string shown(std::string_view text, std::size_t cap) {
    if (text.size() <= cap) return escape(text);
    return escape(text.substr(0, cap)) + "...";
}

}  // namespace stallscope::spank
