// The JSON scanner under read_sample_line (sample_line_reader.cc); internal to libstallscope/timeline.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace stallscope::sample_line_detail {

// Thrown for anything the caller should leave to nlohmann (invalid JSON, or JSON it does not handle).
struct GiveUp {};

inline constexpr int kMaxSkipDepth = 64;  // skip() gives up on deeper nesting (nlohmann has no limit)

// A number, typed as nlohmann's lexer types it: an integer token is unsigned (no '-') or signed when it fits
// 64 bits; anything else (fraction, exponent, a longer integer) is a double, and one that is not finite
// makes nlohmann reject the whole line.
struct NumberToken {
    enum Kind { kUnsigned, kSigned, kFloat } kind = kUnsigned;
    std::uint64_t u = 0;
    std::int64_t i = 0;
    double d = 0;
};

// A strict JSON scanner over one line, validating as nlohmann's lexer does (grammar, escapes, surrogate
// pairs, UTF-8, no raw control characters), building nothing it is not asked for.
class Parser {
  public:
    explicit Parser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

    void ws() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    }
    char peek() {
        ws();
        if (p_ >= end_) throw GiveUp{};
        return *p_;
    }
    void expect(char c) {
        if (peek() != c) throw GiveUp{};
        ++p_;
    }
    bool at_end() {
        ws();
        return p_ == end_;
    }
    void literal(const char* word) {
        const std::size_t n = std::strlen(word);
        if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) throw GiveUp{};
        p_ += n;
    }
    bool null() {
        if (peek() != 'n') return false;
        literal("null");
        return true;
    }

    // Objects: `bool first = true; begin_object(); while (next_key(first, key)) { read the value }`.
    void begin_object() { expect('{'); }
    bool next_key(bool& first, std::string_view& key) {
        const char c = peek();
        if (c == '}') {
            ++p_;
            return false;
        }
        if (!first) {
            if (c != ',') throw GiveUp{};
            ++p_;
        }
        first = false;
        key = string_view_of_next_string(key_scratch_);
        expect(':');
        return true;
    }
    // Arrays: `bool first = true; begin_array(); while (next_item(first)) { read the item }`.
    void begin_array() { expect('['); }
    bool next_item(bool& first) {
        const char c = peek();
        if (c == ']') {
            ++p_;
            return false;
        }
        if (!first) {
            if (c != ',') throw GiveUp{};
            ++p_;
        }
        first = false;
        return true;
    }

    // A JSON string into `out` (decoded, validated as nlohmann validates: UTF-8, escapes, surrogates).
    void string(std::string& out) {
        expect('"');
        const char* start = p_;
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                out.assign(start, static_cast<std::size_t>(p_ - start));
                ++p_;
                return;
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) break;
            ++p_;
        }
        out.assign(start, static_cast<std::size_t>(p_ - start));
        string_slow(out);
    }
    // A string as a view: into the line when it has no escapes, else into `scratch`.
    std::string_view string_view_of_next_string(std::string& scratch) {
        expect('"');
        const char* start = p_;
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                ++p_;
                return {start, static_cast<std::size_t>(p_ - 1 - start)};
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) break;
            ++p_;
        }
        scratch.assign(start, static_cast<std::size_t>(p_ - start));
        string_slow(scratch);
        return scratch;
    }

    NumberToken number() {
        ws();
        NumberToken t;
        const char* start = p_;
        bool negative = false, integer = true;
        if (p_ < end_ && *p_ == '-') {
            negative = true;
            ++p_;
        }
        if (p_ >= end_) throw GiveUp{};
        if (*p_ == '0') {
            ++p_;
        } else if (*p_ >= '1' && *p_ <= '9') {
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        } else {
            throw GiveUp{};
        }
        if (p_ < end_ && *p_ == '.') {
            integer = false;
            ++p_;
            if (p_ >= end_ || *p_ < '0' || *p_ > '9') throw GiveUp{};
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            integer = false;
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ >= end_ || *p_ < '0' || *p_ > '9') throw GiveUp{};
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        // As nlohmann: strtoull / strtoll for integers, strtod when they overflow or for the rest.
        if (integer && !negative && std::from_chars(start, p_, t.u).ec == std::errc()) {
            t.kind = NumberToken::kUnsigned;
        } else if (integer && negative && std::from_chars(start, p_, t.i).ec == std::errc()) {
            t.kind = NumberToken::kSigned;
        } else {
            t.kind = NumberToken::kFloat;
            // (Overflow is a parse error there; underflow is not, but is rare enough to leave to nlohmann.)
            if (std::from_chars(start, p_, t.d).ec != std::errc()) throw GiveUp{};
        }
        return t;
    }

    // Any value, validated and dropped (iteratively: a hostile line cannot exhaust the stack).
    void skip() {
        bool is_object[kMaxSkipDepth + 1] = {};
        int depth = 0;
        for (;;) {
            const char c = peek();
            if (c == '{' || c == '[') {
                ++p_;
                if (depth == kMaxSkipDepth) throw GiveUp{};
                is_object[++depth] = c == '{';
                if (peek() == (c == '{' ? '}' : ']')) {
                    ++p_;
                    --depth;
                } else {
                    if (c == '{') skip_key();
                    continue;  // read the first member's value / the first item
                }
            } else {
                skip_scalar();
            }
            // After a value: close what ends here, then go on with the next member/item, or stop.
            for (;;) {
                if (depth == 0) return;
                const char n = peek();
                if (n == ',') {
                    ++p_;
                    if (is_object[depth]) skip_key();
                    break;
                }
                if (n != (is_object[depth] ? '}' : ']')) throw GiveUp{};
                ++p_;
                --depth;
            }
        }
    }

    // Where the next value starts (for handing a member's text to nlohmann), and where the last one ended.
    const char* value_start() {
        ws();
        return p_;
    }
    const char* position() const { return p_; }

  private:
    void skip_key() {
        std::string_view ignored = string_view_of_next_string(key_scratch_);
        (void)ignored;
        expect(':');
    }
    void skip_scalar() {
        const char c = peek();
        if (c == '"') {
            (void)string_view_of_next_string(value_scratch_);
        } else if (c == 't') {
            literal("true");
        } else if (c == 'f') {
            literal("false");
        } else if (c == 'n') {
            literal("null");
        } else if (c == '{' || c == '[') {
            throw GiveUp{};  // not reached: skip() opens containers itself
        } else {
            (void)number();
        }
    }

    // The rest of a string after its plain prefix (already in `out`): escapes and UTF-8.
    void string_slow(std::string& out) {
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                ++p_;
                return;
            }
            if (c < 0x20) throw GiveUp{};  // control characters must be escaped
            if (c == '\\') {
                ++p_;
                if (p_ >= end_) throw GiveUp{};
                const char e = *p_++;
                switch (e) {
                    case '"':
                        out.push_back('"');
                        break;
                    case '\\':
                        out.push_back('\\');
                        break;
                    case '/':
                        out.push_back('/');
                        break;
                    case 'b':
                        out.push_back('\b');
                        break;
                    case 'f':
                        out.push_back('\f');
                        break;
                    case 'n':
                        out.push_back('\n');
                        break;
                    case 'r':
                        out.push_back('\r');
                        break;
                    case 't':
                        out.push_back('\t');
                        break;
                    case 'u':
                        append_utf8(out, codepoint());
                        break;
                    default:
                        throw GiveUp{};
                }
                continue;
            }
            if (c < 0x80) {
                out.push_back(static_cast<char>(c));
                ++p_;
                continue;
            }
            const std::size_t n = utf8_length(reinterpret_cast<const unsigned char*>(p_));
            out.append(p_, n);
            p_ += n;
        }
        throw GiveUp{};  // unterminated
    }

    // A well-formed UTF-8 sequence at p (RFC 3629, as nlohmann's lexer accepts it): its length.
    std::size_t utf8_length(const unsigned char* p) const {
        const std::size_t left = static_cast<std::size_t>(end_ - p_);
        auto cont = [&](std::size_t i, unsigned char lo, unsigned char hi) {
            return i < left && p[i] >= lo && p[i] <= hi;
        };
        const unsigned char c = p[0];
        if (c >= 0xC2 && c <= 0xDF && cont(1, 0x80, 0xBF)) return 2;
        if (c == 0xE0 && cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF)) return 3;
        if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) && cont(1, 0x80, 0xBF) &&
            cont(2, 0x80, 0xBF))
            return 3;
        if (c == 0xED && cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF)) return 3;
        if (c == 0xF0 && cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)) return 4;
        if (c >= 0xF1 && c <= 0xF3 && cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF))
            return 4;
        if (c == 0xF4 && cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)) return 4;
        throw GiveUp{};
    }

    unsigned hex4() {
        if (end_ - p_ < 4) throw GiveUp{};
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = *p_++;
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= static_cast<unsigned>(h - 'A' + 10);
            else
                throw GiveUp{};
        }
        return v;
    }
    // After "\u": one code point, a surrogate pair joined; a lone surrogate is invalid (as in nlohmann).
    unsigned codepoint() {
        const unsigned first = hex4();
        if (first >= 0xDC00 && first <= 0xDFFF) throw GiveUp{};
        if (first < 0xD800 || first > 0xDBFF) return first;
        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') throw GiveUp{};
        p_ += 2;
        const unsigned second = hex4();
        if (second < 0xDC00 || second > 0xDFFF) throw GiveUp{};
        return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    }
    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    const char* p_;
    const char* end_;
    std::string key_scratch_, value_scratch_;
};

}  // namespace stallscope::sample_line_detail
