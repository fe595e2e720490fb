// `stallscope watch` driven as a user drives it: the fixture jobs, a 1 000-node job on one screen, a
// hang banner from evidence files, and a timeline still being written by a running `stallscope record`.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using test::run_process;

namespace {

const std::string kExe = STALLSCOPE_EXE;
const std::string kJobs = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::size_t lines_in(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

}  // namespace

TEST_CASE("watch --once on a finished fixture job: labels, reasons as they appeared, the worst node first") {
    const auto r = run_process({kExe, "watch", kJobs + "job-4242", "--once"}, {"LINES=30"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("job 4242  4 nodes") != std::string::npos);
    CHECK(r.out.find("reasons (as they appeared") != std::string::npos);
    CHECK(r.out.find("worst nodes:") != std::string::npos);
    CHECK(r.out.find("!! HANG") == std::string::npos);  // no evidence files: no banner
    CHECK(lines_in(r.out) <= 30);
}

TEST_CASE("watch --json: one line per frame for tools") {
    const auto r = run_process({kExe, "watch", kJobs + "job-4343", "--once", "--json", "--top", "3"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(lines_in(r.out) == 1);
    const Json j = Json::parse(r.out);
    CHECK(j["schema"] == "stallscope.watch/1");
    CHECK(j["nodes"] == 8);
    CHECK(j["worst_nodes"].size() == 3);
    CHECK(j["hang"].is_null());
    CHECK(j["reasons"].size() > 0);
}

TEST_CASE("watch fits one screen at 1 000 nodes") {
    const std::string dir = test::make_temp_dir("watch-1000");
    const std::string one = read_file(kJobs + "job-4343/timeline.0.node-01.jsonl");
    REQUIRE(!one.empty());
    for (int n = 0; n < 1000; ++n) {
        char host[16];
        std::snprintf(host, sizeof host, "nd-%04d", n);
        std::ofstream(dir + "/timeline.0." + host + ".jsonl") << replace_all(one, "node-01", host);
    }
    const auto r = run_process({kExe, "watch", dir, "--once"}, {"LINES=40"}, 120);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("1000 nodes") != std::string::npos);
    CHECK(lines_in(r.out) <= 40);
    CHECK(r.out.find("more nodes") != std::string::npos);
    MESSAGE("watch --once over 1000 timelines: " << r.seconds << " s");
    std::filesystem::remove_all(dir);
}

TEST_CASE("watch shows the hang banner with the culprit once evidence files exist") {
    const std::string dir = test::make_temp_dir("watch-hang");
    for (const auto& e : std::filesystem::directory_iterator(kJobs + "job-4242"))
        std::filesystem::copy_file(e.path(), dir + "/" + e.path().filename().string());
    Json rows = Json::array();
    for (int rank = 0; rank < 4; ++rank)
        rows.push_back(
            {{"rank", rank},
             {"pid", 500 + rank},
             {"gpu", rank},
             {"gpu_state", {{"utilization_pct", rank == 2 ? 0 : 100}, {"sm_active_pct", rank == 2 ? 0 : 1}}},
             {"main_thread",
              {{"activity", rank == 2 ? "io_wait" : "spinning"}, {"state", rank == 2 ? "D" : "R"}}}});
    std::ofstream(dir + "/evidence.0.gpu-node-01.1.json")
        << Json{{"schema", "stallscope.hang_evidence/1"}, {"host", "gpu-node-01"}, {"ranks", rows}}.dump();
    const auto r = run_process({kExe, "watch", dir, "--once"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(r.out.find("!! HANG culprit: rank 2 (gpu-node-01 GPU2 pid 502)") != std::string::npos,
                  r.out);
    const auto j = run_process({kExe, "watch", dir, "--once", "--json"});
    CHECK(Json::parse(j.out)["hang"]["rank"] == 2);
    std::filesystem::remove_all(dir);
}

TEST_CASE("watch follows a timeline that a running `stallscope record` is still writing") {
    const std::string dir = test::make_temp_dir("watch-live");
    const int pid = test::start_process({kExe, "record", "--out-dir", dir, "--interval-seconds", "0.2"},
                                        test::fixture_node_env("dgx-h100"));
    REQUIRE(pid > 0);
    auto frame = [&] {
        const auto r = run_process({kExe, "watch", dir, "--once", "--json"});
        return r.exit_code == 0 ? Json::parse(r.out) : Json();
    };
    Json first;
    for (int i = 0; i < 100 && (first.is_null() || first["last_sample"].is_null()); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        first = frame();
    }
    REQUIRE(!first.is_null());
    CHECK(first["nodes"] == 1);
    REQUIRE(first["last_sample"].is_string());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const Json later = frame();
    REQUIRE(later["last_sample"].is_string());
    CHECK(*parse_rfc3339(later["last_sample"].get<std::string>()) >
          *parse_rfc3339(first["last_sample"].get<std::string>()));
    ::kill(pid, SIGTERM);
    CHECK(test::wait_process(pid, 10) == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("watch usage errors and a missing directory") {
    CHECK(run_process({kExe, "watch"}).exit_code == 2);
    CHECK(run_process({kExe, "watch", "/nonexistent/dir"}).exit_code == 1);
    CHECK(run_process({kExe, "watch", kJobs + "job-4242", "--interval", "0"}).exit_code == 2);
}
