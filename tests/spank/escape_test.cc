// spank/escape.h: one escaping function for the state file, slurmd's log and the user's terminal (L6).
#include <doctest/doctest.h>

#include "spank/escape.h"

using namespace stallscope::spank;

namespace {

// No byte a terminal or a line-based log reader acts on survives escape().
bool inert(const std::string& s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return false;
        if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(s[i + 1]) <= 0x9f)
            return false;  // UTF-8 C1
        if (c == 0xe2 && i + 2 < s.size()) {
            const auto b = static_cast<unsigned char>(s[i + 1]), d = static_cast<unsigned char>(s[i + 2]);
            if (b == 0x80 && ((d >= 0xaa && d <= 0xae) || d == 0xa8 || d == 0xa9)) return false;
            if (b == 0x81 && d >= 0xa6 && d <= 0xa9) return false;
        }
    }
    return true;
}

}  // namespace

TEST_CASE("escape: C0, DEL and '%' become %XX, printable ASCII stays") {
    CHECK(escape("/home/u/run 1") == "/home/u/run 1");
    CHECK(escape("a\nb\rc\td\x1b[31m\x7f%") == "a%0ab%0dc%09d%1b[31m%7f%25");
    CHECK(escape(std::string("x\0y", 3)) == "x%00y");
}

TEST_CASE("escape: raw and UTF-8-encoded C1, bidi overrides and isolates, line separators are escaped") {
    CHECK(escape("x\x9b"
                 "2J") == "x%9b2J");  // raw C1 CSI (8-bit terminals)
    CHECK(escape("x\xc2\x9b"
                 "2J") == "x%c2%9b2J");  // U+009B CSI on a UTF-8 terminal
    CHECK(escape("\xc2\x9d"
                 "0;PWNED\x07") == "%c2%9d0;PWNED%07");  // OSC ... BEL
    CHECK(escape("a\xe2\x80\xae"
                 "b") == "a%e2%80%aeb");  // U+202E RIGHT-TO-LEFT OVERRIDE
    CHECK(escape("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad") ==
          "%e2%80%aa%e2%80%ab%e2%80%ac%e2%80%ad");  // U+202A-U+202D
    CHECK(escape("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9") ==
          "%e2%81%a6%e2%81%a7%e2%81%a8%e2%81%a9");  // U+2066-U+2069
    CHECK(escape("a\xe2\x80\xa8"
                 "b\xe2\x80\xa9") == "a%e2%80%a8b%e2%80%a9");
}

TEST_CASE("escape: other valid UTF-8 is kept, invalid UTF-8 is escaped byte by byte") {
    CHECK(escape("/home/jos\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x9a\x80") ==
          "/home/jos\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x9a\x80");
    CHECK(escape("\xc2\xa0") == "\xc2\xa0");                               // U+00A0, right after the C1 block
    CHECK(escape("\xe2\x80\xa9\xe2\x80\xaf") == "%e2%80%a9\xe2\x80\xaf");  // U+202F is not an override
    CHECK(escape("\xc0\xaf") == "%c0%af");                                 // overlong '/'
    CHECK(escape("\xed\xa0\x80") == "%ed%a0%80");                          // a surrogate
    CHECK(escape("\xe2\x80") == "%e2%80");                                 // cut short
    CHECK(escape("\xf5\x80\x80\x80") == "%f5%80%80%80");                   // above U+10FFFF
    CHECK(escape("\xe9t\xe9") == "%e9t%e9");                               // Latin-1
}

TEST_CASE("escape/unescape round-trip every byte value; shown() caps and escapes") {
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    all += "\xc2\x9b\xe2\x80\xae\xe2\x81\xa6\xc3\xa9";
    const std::string e = escape(all);
    CHECK(inert(e));
    CHECK(unescape(e) == all);
    CHECK_FALSE(unescape("%zz"));
    CHECK_FALSE(unescape("%4"));
    CHECK(shown("abc", 2) == "ab...");
    CHECK(shown("a\nb", 10) == "a%0ab");
    CHECK(inert(shown(all, 1000)));
}
