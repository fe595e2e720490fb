// The job directory as an attacker shapes it (issue 36: M2, L3, L4): every reader of job files (report,
// summarize, the writer's merge, the slurmctld epilog's `report --comment`, html, compare) goes through
// one bounded reader. Inputs made as the security review made them, from a real fixture verdict.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::slurp;

namespace {

const std::string kVerdict =
    std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4343/verdict.0.node-02.json";

Json fixture_verdict() {
    std::ifstream in(kVerdict);
    REQUIRE(in.good());
    return Json::parse(in);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

// The fixture verdict as host `host` would have written it.
std::string verdict_of(const std::string& host) {
    Json v = fixture_verdict();
    v["host"] = host;
    return v.dump();
}

// M2's input: the fixture verdict with node_stats.gpus replaced by empty objects up to 4 MiB.
std::string huge_gpu_verdict(const std::string& host) {
    Json v = fixture_verdict();
    v["host"] = host;
    v["node_stats"]["gpus"] = Json::array();
    std::string text = v.dump();
    const auto at = text.find("\"gpus\":[]");
    REQUIRE(at != std::string::npos);
    const std::size_t room = (4u << 20) - text.size() - 16;
    std::string gpus;
    gpus.reserve(room);
    while (gpus.size() + 3 < room) gpus += gpus.empty() ? "{}" : ",{}";
    text.insert(at + 8, gpus);
    REQUIRE(text.size() <= (4u << 20));
    return text;
}

// L3's input: `"deep": [[[...]]]` of `depth` levels as the first key of the first reason's evidence,
// other keys after it (a deep value followed by another key is what overflowed the stack).
std::string deep_verdict(const std::string& host, std::size_t depth) {
    Json v = fixture_verdict();
    v["host"] = host;
    v["verdict"]["reasons"][0]["evidence"] = Json::object();
    v["verdict"]["reasons"][0]["evidence"]["deep"] = "PLACEHOLDER";
    v["verdict"]["reasons"][0]["evidence"]["after"] = 1;
    std::string text = v.dump();
    const auto at = text.find("\"PLACEHOLDER\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, 13, std::string(depth, '[') + std::string(depth, ']'));
    return text;
}

struct Measured {
    int exit_code = -1, signal = 0;
    long peak_rss_kib = 0;
    double seconds = 0;
    std::string out, err;
};

// run_process, but with the child's own peak RSS (wait4's rusage: this child only).
Measured run_measured(const std::vector<std::string>& argv) {
    const std::string dir = make_temp_dir("job-files-run");
    const std::string out = dir + "/out", err = dir + "/err";
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(o, 1), ::dup2(e, 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
    Measured m;
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    m.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    m.peak_rss_kib = usage.ru_maxrss;
    m.out = slurp(out), m.err = slurp(err);
    return m;
}

}  // namespace

TEST_CASE(
    "M2: a 4 MiB verdict of ~1.4 M empty GPUs and hard links to it: refused by name, < 256 MiB, < 10 s") {
    const std::string dir = make_temp_dir("job-files-m2") + "/stallscope-5";
    std::filesystem::create_directory(dir);
    write_text(dir + "/verdict.0.node-02.json", verdict_of("node-02"));
    write_text(dir + "/verdict.0.h0.json", huge_gpu_verdict("h0"));
    for (const char* link : {"/verdict.0.h1.json", "/verdict.0.h2.json", "/verdict.0.h3.json"})
        std::filesystem::create_hard_link(dir + "/verdict.0.h0.json", dir + link);

    const Measured m = run_measured({STALLSCOPE_EXE, "report", "--comment", "--jobs", "2", dir});
    MESSAGE("report --comment: " << m.peak_rss_kib / 1024 << " MiB peak RSS, " << m.seconds << " s");
    REQUIRE_MESSAGE(m.exit_code == 0, "signal " << m.signal << ": " << m.err);
    CHECK(m.out.rfind("stallscope/1 ", 0) == 0);
    CHECK(m.peak_rss_kib < 256 * 1024);
    CHECK(m.seconds < 10);
    // Refused with a message naming the file and what is over; its other names read once (not at all).
    CHECK(m.err.find(dir + "/verdict.0.h") != std::string::npos);
    CHECK(m.err.find("node_stats.gpus holds more than 1024 GPUs") != std::string::npos);
    CHECK(m.err.find("3 name(s) of a file already read (hard links)") != std::string::npos);
}

TEST_CASE("an inode is read once however many names it has") {
    const std::string dir = make_temp_dir("job-files-links") + "/stallscope-6";
    std::filesystem::create_directory(dir);
    write_text(dir + "/verdict.0.node-02.json", verdict_of("node-02"));
    for (const char* link : {"/verdict.0.n1.json", "/verdict.0.n2.json", "/timeline.0.n3.jsonl"})
        std::filesystem::create_hard_link(dir + "/verdict.0.node-02.json", dir + link);
    const auto r = run_process({STALLSCOPE_EXE, "report", "--json", dir});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const Json j = Json::parse(r.out);
    CHECK(j["nodes"].size() == 1);
    bool said = false;
    for (const auto& w : j["warnings"])
        said = said || w.get<std::string>().find("hard links") != std::string::npos;
    CHECK(said);
}

TEST_CASE("L3: a value nested 100 000 deep before another key is refused, not a crash, in every reader") {
    const std::string dir = make_temp_dir("job-files-deep") + "/stallscope-7";
    std::filesystem::create_directory(dir);
    write_text(dir + "/verdict.0.node-02.json", verdict_of("node-02"));
    write_text(dir + "/verdict.0.deep.json", deep_verdict("deep", 100000));
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{STALLSCOPE_EXE, "report", "--comment", dir},
          std::vector<std::string>{STALLSCOPE_EXE, "report", dir}}) {
        const auto r = run_process(argv);
        CHECK_MESSAGE(r.signal == 0, "killed by signal " << r.signal);
        CHECK_MESSAGE(r.exit_code == 0, r.err);
    }
    const auto c = run_process({STALLSCOPE_EXE, "report", "--comment", dir});
    CHECK(c.err.find(dir + "/verdict.0.deep.json: nested deeper than 64 levels") != std::string::npos);
    // 64 levels in all is the limit; the fixture's own depth (5) plus 50 nested lists is still read.
    write_text(dir + "/verdict.0.deep.json", deep_verdict("deep", 50));
    const auto ok = run_process({STALLSCOPE_EXE, "report", "--json", dir});
    REQUIRE_MESSAGE(ok.exit_code == 0, ok.err);
    CHECK(Json::parse(ok.out)["nodes"].size() == 2);
    CHECK(ok.out.find("nested deeper") == std::string::npos);
}

TEST_CASE("L4: the verdict's timeline field is never opened; only the timeline next to it by stem") {
    const std::string dir = make_temp_dir("job-files-timeline") + "/stallscope-8";
    std::filesystem::create_directory(dir);
    const std::string decoy = make_temp_dir("job-files-decoy") + "/timeline.0.other.jsonl";
    write_text(decoy, "not a timeline\n");
    Json v = fixture_verdict();
    v["timeline"] = decoy;
    write_text(dir + "/verdict.0.node-02.json", v.dump());
    const std::string page = dir + "/../page.html";
    const auto h = run_process({STALLSCOPE_EXE, "html", dir, "-o", page});
    CHECK(h.err.find(decoy) == std::string::npos);
    CHECK(slurp(page).find(decoy) == std::string::npos);
    const auto r = run_process({STALLSCOPE_EXE, "report", "--json", dir});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(Json::parse(r.out)["nodes"][0]["timeline"] == "");
}

// The 65 537-recording cap is tests/cli/job_files_limit_test.sh (the plain build runs it).
