// The test vectors of doc/timeline-format.md, read from the document itself and checked against the real
// writer and reader: the document cannot say one thing while the code does another. A vector block is
// a fenced block whose info string is "vector <kind>"; the kinds and their line syntax are described next
// to each block in the document.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "libstallscope/timeline/binary_record.h"
#include "libstallscope/timeline/snapshot_diff.h"
#include "libstallscope/timeline/timeline.h"

using namespace stallscope;

namespace {

const std::string kDocument = std::string(STALLSCOPE_TESTS_DIR) + "/../doc/timeline-format.md";

struct VectorBlock {
    std::string kind;
    std::size_t line = 0;  // in the document, for messages
    std::vector<std::string> lines;
};

// Every "```vector <kind>" block of the document, in order.
std::vector<VectorBlock> vector_blocks() {
    std::ifstream in(kDocument);
    REQUIRE_MESSAGE(in.good(), "cannot read ", kDocument);
    std::vector<VectorBlock> blocks;
    std::string text;
    bool inside = false;
    for (std::size_t number = 1; std::getline(in, text); ++number) {
        if (!inside && text.starts_with("```vector ")) {
            blocks.push_back({text.substr(10), number, {}});
            inside = true;
        } else if (inside && text.starts_with("```")) {
            inside = false;
        } else if (inside && !text.empty()) {
            blocks.back().lines.push_back(text);
        }
    }
    CHECK_FALSE(inside);  // an unclosed block
    return blocks;
}

// The blocks of one kind; REQUIREs there is at least one, each with at least one line, so a renamed
// kind or an emptied block fails instead of checking nothing.
std::vector<VectorBlock> blocks_of(const std::string& kind) {
    std::vector<VectorBlock> out;
    for (auto& b : vector_blocks())
        if (b.kind == kind) out.push_back(std::move(b));
    REQUIRE_MESSAGE(!out.empty(), "no \"vector ", kind, "\" block in ", kDocument);
    for (const auto& b : out) REQUIRE_MESSAGE(!b.lines.empty(), "empty vector block at line ", b.line);
    return out;
}

// "1e 03 0b" -> the bytes; stops at the first word that is not two hex digits (what follows is prose).
std::string hex_bytes(const std::string& words, std::string* rest = nullptr) {
    std::istringstream in(words);
    std::string bytes, word;
    while (in >> word) {
        if (word.size() != 2 || !std::isxdigit(static_cast<unsigned char>(word[0])) ||
            !std::isxdigit(static_cast<unsigned char>(word[1]))) {
            if (rest) {
                std::getline(in, *rest);
                *rest = word + *rest;
            }
            return bytes;
        }
        bytes.push_back(static_cast<char>(std::stoul(word, nullptr, 16)));
    }
    if (rest) rest->clear();
    return bytes;
}

// "<first word> <hex bytes>": the word and the bytes.
std::pair<std::string, std::string> word_and_bytes(const std::string& line) {
    const auto space = line.find(' ');
    REQUIRE(space != std::string::npos);
    return {line.substr(0, space), hex_bytes(line.substr(space + 1))};
}

std::string hex_of(const std::string& bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        if (!out.empty()) out.push_back(' ');
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
    return out;
}

bool same_double_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// The one record `bytes` spells, read; REQUIREs it reads.
PlainRecord read_record(const std::string& bytes) {
    PlainRecord record;
    REQUIRE_MESSAGE(read_binary_record(bytes, record), hex_of(bytes));
    return record;
}

std::string number_list(const std::vector<std::int64_t>& a) {
    std::string out = "[";
    for (std::size_t i = 0; i < a.size(); ++i) out += (i ? "," : "") + std::to_string(a[i]);
    return out + "]";
}

std::string number_list(const std::vector<double>& g) {
    Json list = Json::array();
    for (double v : g) list.push_back(v);
    return list.dump();
}

// A timeline's samples (as their to_json trees) and its warnings, read from `bytes` as a file.
struct ReadBack {
    std::vector<Json> samples;
    std::vector<std::string> warnings;
};

ReadBack read_bytes(const std::string& bytes, bool whole_samples) {
    const int fd = ::memfd_create("timeline-vector", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
    struct Collect final : TimelineVisitor {
        std::vector<Json>& samples;
        explicit Collect(std::vector<Json>& out) : samples(out) {}
        void sample(Snapshot&& s) override { samples.push_back(to_json(s)); }
        void sample_view(const Snapshot& s) override { samples.push_back(to_json(s)); }
    };
    ReadBack out;
    Collect collect(out.samples);
    std::string error;
    TimelineReadLimits limits;
    limits.whole_samples = whole_samples;
    const bool ok = visit_timeline_fd(fd, "vector", collect, out.warnings, error, limits);
    ::close(fd);
    REQUIRE_MESSAGE(ok, error);
    return out;
}

}  // namespace

TEST_CASE("timeline-format.md: each varint is the bytes the writer writes") {
    std::size_t checked = 0;
    for (const auto& block : blocks_of("varint"))
        for (const auto& line : block.lines) {
            CAPTURE(line);
            const auto [number, bytes] = word_and_bytes(line);
            std::string written;
            append_record_varint(written, std::stoull(number));
            CHECK(hex_of(written) == hex_of(bytes));
            CHECK(written.find('\n') == std::string::npos);
            ++checked;
        }
    CHECK(checked >= 5);
}

TEST_CASE("timeline-format.md: each delta is written and read back as documented") {
    std::size_t checked = 0;
    for (const auto& block : blocks_of("delta"))
        for (const auto& line : block.lines) {
            CAPTURE(line);
            const auto [number, bytes] = word_and_bytes(line);
            const std::int64_t delta = std::stoll(number);
            std::string written;
            append_record_delta(written, delta);
            CHECK(hex_of(written) == hex_of(bytes));
            const PlainRecord record = read_record(std::string("\x1e\x01\x01", 3) + bytes);
            REQUIRE(record.a.size() == 1);
            CHECK(record.a[0] == delta);
            ++checked;
        }
    CHECK(checked >= 5);
}

TEST_CASE("timeline-format.md: each gauge is written and read back bit for bit as documented") {
    std::size_t checked = 0;
    for (const auto& block : blocks_of("gauge"))
        for (const auto& line : block.lines) {
            CAPTURE(line);
            const auto [number, bytes] = word_and_bytes(line);
            const double value = std::stod(number);
            std::string written;
            append_record_gauge(written, value);
            CHECK(hex_of(written) == hex_of(bytes));
            const PlainRecord record = read_record(std::string("\x1e\x02\x01", 3) + bytes);
            REQUIRE(record.g.size() == 1);
            CHECK(same_double_bits(record.g[0], value));
            ++checked;
        }
    CHECK(checked >= 4);
}

TEST_CASE("timeline-format.md: each binary record reads as documented, or is refused") {
    std::size_t valid = 0, invalid = 0;
    for (const auto& block : blocks_of("record"))
        for (const auto& line : block.lines) {
            CAPTURE(line);
            std::string meaning;
            const std::string bytes = hex_bytes(line, &meaning);
            PlainRecord record;
            if (meaning.starts_with("invalid")) {
                CHECK_FALSE(read_binary_record(bytes, record));
                ++invalid;
                continue;
            }
            REQUIRE(read_binary_record(bytes, record));
            // "a=[...] g=[...]", "a=none": what the record holds, in the JSON record's spelling.
            std::string expected_a = "none", expected_g = "none";
            std::istringstream words(meaning);
            for (std::string word; words >> word;) {
                if (word.starts_with("a=")) expected_a = word.substr(2);
                if (word.starts_with("g=")) expected_g = word.substr(2);
            }
            CHECK((record.has_a ? number_list(record.a) : "none") == expected_a);
            if (expected_g == "none") {
                CHECK_FALSE(record.has_g);
            } else {
                REQUIRE(record.has_g);
                CHECK(Json::parse(number_list(record.g)) == Json::parse(expected_g));
            }
            ++valid;
        }
    CHECK(valid >= 3);
    CHECK(invalid >= 3);
}

TEST_CASE("timeline-format.md: each worked timeline reads as documented, by both reading paths") {
    std::size_t timelines = 0;
    for (const auto& block : blocks_of("timeline")) {
        CAPTURE(block.line);
        std::string file;
        std::vector<std::pair<std::size_t, std::pair<std::string, Json>>> expects;
        std::vector<std::string> warnings;
        std::size_t samples = static_cast<std::size_t>(-1);
        for (const auto& line : block.lines) {
            CAPTURE(line);
            const auto space = line.find(' ');
            REQUIRE(space != std::string::npos);
            const std::string kind = line.substr(0, space), rest = line.substr(space + 1);
            if (kind == "line") {
                file += rest + "\n";
            } else if (kind == "bytes") {
                file += hex_bytes(rest);
            } else if (kind == "expect") {
                std::istringstream in(rest);
                std::size_t index = 0;
                std::string pointer, value;
                in >> index >> pointer;
                std::getline(in, value);
                expects.push_back({index, {pointer, Json::parse(value)}});
            } else if (kind == "samples") {
                samples = std::stoul(rest);
            } else if (kind == "warning") {
                warnings.push_back(rest);
            } else {
                FAIL("unknown line kind in a timeline vector: ", kind);
            }
        }
        REQUIRE(samples != static_cast<std::size_t>(-1));
        REQUIRE(!expects.empty());
        // The fast reader and the whole-sample reading (the reference) must both say what the document says.
        for (const bool whole : {false, true}) {
            CAPTURE(whole);
            const ReadBack read = read_bytes(file, whole);
            CHECK(read.samples.size() == samples);
            for (const auto& entry : expects) {
                // References, not a structured binding: CAPTURE is a lambda, and clang before 16 cannot
                // capture a binding.
                const std::size_t& index = entry.first;
                const auto& expect = entry.second;
                CAPTURE(index);
                CAPTURE(expect.first);
                REQUIRE(index < read.samples.size());
                const Json::json_pointer pointer(expect.first);
                REQUIRE(read.samples[index].contains(pointer));
                CHECK(read.samples[index].at(pointer) == expect.second);
            }
            REQUIRE(read.warnings.size() == warnings.size());
            for (std::size_t i = 0; i < warnings.size(); ++i) {
                CAPTURE(read.warnings[i]);
                CHECK(read.warnings[i].find(warnings[i]) != std::string::npos);
            }
        }
        ++timelines;
    }
    CHECK(timelines >= 2);
}

TEST_CASE("timeline-format.md: the writer encodes the documented samples as the documented records") {
    std::size_t records = 0;
    for (const auto& block : blocks_of("encode")) {
        CAPTURE(block.line);
        SnapshotDiffEncoder encoder;
        encoder.set_binary_records(true);  // as stallscope.timeline/3 writes
        std::string written;
        bool have_tree = false;
        for (const auto& line : block.lines) {
            CAPTURE(line);
            if (line.starts_with("tree ")) {
                REQUIRE_FALSE(have_tree);  // each tree is followed by its record
                written.clear();
                encoder.append_record(Json::parse(line.substr(5)), written);
                have_tree = true;
            } else if (line.starts_with("record ")) {
                REQUIRE(have_tree);
                const std::string expected = line.substr(7);
                if (expected.starts_with("{"))
                    CHECK(written == expected);
                else
                    CHECK(hex_of(written) == hex_of(hex_bytes(expected)));
                have_tree = false;
                ++records;
            } else {
                FAIL("unknown line kind in an encode vector: ", line);
            }
        }
        CHECK_FALSE(have_tree);
    }
    CHECK(records >= 3);
}
