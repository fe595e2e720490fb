// Reading timelines safely (summarize runs the reader as the job user from a root-run epilog on files the
// user controls): nothing blocks, follows a link, grows without bound, or floods the log.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <chrono>
#include <fstream>
#include <random>

#include "libstallscope/timeline/timeline.h"

using namespace stallscope;

namespace {

std::string input_temp_dir() {
    char tmpl[] = "/tmp/stallscope-tlin-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return tmpl;
}

struct Counting final : TimelineVisitor {
    std::size_t samples = 0;
    void sample(Snapshot&&) override { ++samples; }
};

struct Result {
    bool ok = false;
    std::string error;
    std::vector<std::string> warnings;
    std::size_t samples = 0;
    double seconds = 0;
};

Result read(const std::string& path, const TimelineReadLimits& limits = {}) {
    Counting visitor;
    Result r;
    const auto start = std::chrono::steady_clock::now();
    r.ok = visit_timeline(path, visitor, r.warnings, r.error, limits);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.samples = visitor.samples;
    return r;
}

long max_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

const char* kHeader = R"({"type":"header","schema":"stallscope.timeline/1","host":"n1"})";
const char* kSample = R"({"type":"sample","unix_time":1,"host":"n1"})";

}  // namespace

TEST_CASE("a FIFO named like a timeline is refused at once, without waiting for a writer") {
    const std::string path = input_temp_dir() + "/timeline.0.x.jsonl";
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    const Result r = read(path);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("not a regular file") != std::string::npos);
    CHECK(r.seconds < 1.0);
}

TEST_CASE("a symlink (to /dev/zero, or to a real timeline) is refused, and memory does not grow") {
    const std::string dir = input_temp_dir();
    REQUIRE(::symlink("/dev/zero", (dir + "/timeline.0.zero.jsonl").c_str()) == 0);
    const long rss_before = max_rss_kib();
    const Result r = read(dir + "/timeline.0.zero.jsonl");
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("symbolic link") != std::string::npos);
    CHECK(max_rss_kib() - rss_before < 8 * 1024);
    std::ofstream(dir + "/real.jsonl") << kHeader << "\n" << kSample << "\n";
    REQUIRE(::symlink((dir + "/real.jsonl").c_str(), (dir + "/timeline.0.link.jsonl").c_str()) == 0);
    CHECK(read(dir + "/real.jsonl").ok);
    CHECK_FALSE(read(dir + "/timeline.0.link.jsonl").ok);
}

TEST_CASE("/dev/null, an empty file, an ELF binary and another tool's JSON are not stallscope timelines") {
    const std::string dir = input_temp_dir();
    std::ofstream(dir + "/empty.jsonl").flush();
    std::ofstream(dir + "/other.jsonl") << R"({"level":"info","msg":"started"})"
                                        << "\n"
                                        << R"({"level":"info","msg":"done"})"
                                        << "\n";
    std::ofstream(dir + "/array.jsonl") << "[1,2,3]\n";
    for (const std::string& path : {std::string("/dev/null"), dir + "/empty.jsonl", std::string("/bin/true"),
                                    dir + "/other.jsonl", dir + "/array.jsonl"}) {
        CAPTURE(path);
        const Result r = read(path);
        CHECK_FALSE(r.ok);
        CHECK(r.error.find("not a stallscope timeline") != std::string::npos);
        CHECK(r.warnings.empty());
    }
}

TEST_CASE("a 5 MB random file is refused in one error; random lines after a timeline give capped warnings") {
    const std::string dir = input_temp_dir();
    std::mt19937 rng(42);
    std::string noise(5 << 20, '\0');
    for (auto& c : noise) c = static_cast<char>(rng());
    std::ofstream(dir + "/random.jsonl", std::ios::binary) << noise;
    const Result random = read(dir + "/random.jsonl");
    CHECK_FALSE(random.ok);
    CHECK(random.error.find("not a stallscope timeline") != std::string::npos);
    CHECK(random.warnings.empty());

    std::ofstream(dir + "/tail.jsonl", std::ios::binary) << kHeader << "\n" << kSample << "\n" << noise;
    const Result tail = read(dir + "/tail.jsonl");
    CHECK(tail.ok);
    CHECK(tail.samples == 1);
    REQUIRE(tail.warnings.size() == kMaxWarnings + 1);
    CHECK(tail.warnings.back().find("more warnings like these not shown") != std::string::npos);
}

TEST_CASE("a line over the cap is skipped with one warning; the buffer does not grow with it") {
    const std::string dir = input_temp_dir();
    {
        std::ofstream out(dir + "/long.jsonl", std::ios::binary);
        out << kHeader << "\n" << kSample << "\n";
        out << R"({"type":"event","pad":")" << std::string(12 << 20, 'x') << "\"}\n";  // 12 MiB
        out << kSample << "\n";
    }
    const long rss_before = max_rss_kib();
    const Result r = read(dir + "/long.jsonl");
    CHECK(r.ok);
    CHECK(r.samples == 2);
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0].find(":3: line longer than 1 MiB, skipped") != std::string::npos);
    CHECK(max_rss_kib() - rss_before < 8 * 1024);

    TimelineReadLimits small;
    small.max_line_bytes = 1024;
    std::ofstream(dir + "/first.jsonl") << std::string(4096, ' ') << kHeader << "\n";
    const Result first = read(dir + "/first.jsonl", small);
    CHECK_FALSE(first.ok);
    CHECK(first.error.find("first line longer than") != std::string::npos);
}

TEST_CASE("a zstd bomb stops at the expansion cap with an error") {
    const std::string dir = input_temp_dir();
    // A valid start, then 300 MiB of blank lines: ~10 KiB compressed.
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    std::string compressed, chunk(1 << 20, '\n');
    std::string header = std::string(kHeader) + "\n" + kSample + "\n";
    std::vector<char> out(ZSTD_CStreamOutSize());
    auto feed = [&](const std::string& data, ZSTD_EndDirective end) {
        ZSTD_inBuffer in{data.data(), data.size(), 0};
        for (;;) {
            ZSTD_outBuffer o{out.data(), out.size(), 0};
            const std::size_t left = ZSTD_compressStream2(cctx, &o, &in, end);
            REQUIRE_FALSE(ZSTD_isError(left));
            compressed.append(out.data(), o.pos);
            if (in.pos == in.size && (end == ZSTD_e_continue || left == 0)) break;
        }
    };
    feed(header, ZSTD_e_continue);
    for (int i = 0; i < 300; ++i) feed(chunk, ZSTD_e_continue);
    feed("", ZSTD_e_end);
    ZSTD_freeCCtx(cctx);
    REQUIRE(compressed.size() < 200'000);
    std::ofstream(dir + "/bomb.jsonl.zst", std::ios::binary) << compressed;
    const Result r = read(dir + "/bomb.jsonl.zst");
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("decompresses to more than") != std::string::npos);
    CHECK(r.samples == 1);

    TimelineReadLimits tiny;
    tiny.max_input_bytes = 1000;
    const Result capped = read(dir + "/bomb.jsonl.zst", tiny);
    CHECK_FALSE(capped.ok);
    CHECK(capped.error.find("larger than") != std::string::npos);
}

TEST_CASE("standard input is read when the path is '-'") {
    const std::string dir = input_temp_dir();
    std::ofstream(dir + "/t.jsonl") << kHeader << "\n" << kSample << "\n" << kSample << "\n";
    const int saved = ::dup(STDIN_FILENO);
    REQUIRE(std::freopen((dir + "/t.jsonl").c_str(), "r", stdin) != nullptr);
    const Result r = read("-");
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
    CHECK(r.ok);
    CHECK(r.samples == 2);
}
