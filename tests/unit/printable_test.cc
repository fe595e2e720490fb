// printable(): the one terminal-safe rendering of job-controlled text (issue 36, L2 and I7).
#include "libstallscope/util/printable.h"

#include <doctest/doctest.h>

using stallscope::printable;
using stallscope::printable_lines;

TEST_CASE("printable: C0, DEL and ESC sequences become \\xNN; plain text and UTF-8 stay") {
    CHECK(printable("gpu-node-07 mlx5_0/1") == "gpu-node-07 mlx5_0/1");
    CHECK(printable("a\x1b]0;pwned\x07\x1b[2Jb") == "a\\x1b]0;pwned\\x07\\x1b[2Jb");
    CHECK(printable("x\ny\tz\r\x7f") == "x\\x0ay\\x09z\\x0d\\x7f");
    CHECK(printable(std::string("n\0ul", 4)) == "n\\x00ul");
    CHECK(printable("r\xc3\xa9sum\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x9a\x80") ==
          "r\xc3\xa9sum\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x9a\x80");
    CHECK(printable("") == "");
}

TEST_CASE("printable: UTF-8-encoded and raw C1 controls (CSI, OSC) are escaped") {
    CHECK(printable("x\xc2\x9b"
                    "2J\xc2\x9d"
                    "0;PWNED") == "x\\xc2\\x9b2J\\xc2\\x9d0;PWNED");
    CHECK(printable("\xc2\x80\xc2\x9f") == "\\xc2\\x80\\xc2\\x9f");
    CHECK(printable("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is not a control
    // A raw C1 byte, a stray continuation byte, a Latin-1 byte, a cut sequence: no well-formed UTF-8.
    CHECK(printable("a\x9b"
                    "2Jb") == "a\\x9b2Jb");
    CHECK(printable("r\xe9sum\xe9") == "r\\xe9sum\\xe9");
    CHECK(printable("cut\xe2\x98") == "cut\\xe2\\x98");
    // A continuation byte of a well-formed character is not a raw C1: U+011B is c4 9b.
    CHECK(printable("\xc4\x9b") == "\xc4\x9b");
}

TEST_CASE("printable: bidi embeddings, overrides and isolates are escaped (Trojan Source)") {
    CHECK(printable("node\xe2\x80\xae"
                    "10-edon") == "node\\xe2\\x80\\xae10-edon");  // U+202E RLO
    for (const char* bidi : {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                             "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9"})
        CHECK(printable(bidi).find("\\xe2") == 0);
    CHECK(printable("\xe2\x80\xa9") == "\xe2\x80\xa9");  // U+2029, next to them, is not one
    CHECK(printable("\xe2\x81\xaa") == "\xe2\x81\xaa");  // U+206A neither
}

TEST_CASE("printable_lines keeps the line breaks of a multi-line view and escapes the rest") {
    CHECK(printable_lines("a\x1b[31m\nb\r\n") == "a\\x1b[31m\nb\\x0d\n");
    CHECK(printable_lines("one") == "one");
}
