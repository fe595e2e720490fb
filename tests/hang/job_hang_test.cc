// The job merge names the rank a hung job waited for: `summarize` (summary.txt's first line, summary.json's
// `hang`), `report` (text, --json, --html, --comment) and the job writer's comment segment, from evidence
// files built out of the flight-recorder fixtures (fixtures/hang/fr) next to a 4-node fixture job.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "libstallscope/hang/flight_recorder.h"
#include "libstallscope/hang/hang_capture.h"
#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/timeline/job_comment.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using test::run_process;

namespace {

const std::string kJobHangExe = STALLSCOPE_EXE;

std::string read_job_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

// Ranks 0-1 on gpu-node-01, 2-3 on gpu-node-02 (GPU = local rank), each with its flight-recorder dump
// from fixtures/hang/fr/<scenario>. `idle_rank`: that rank's GPU is idle and its main thread in D state
// while the others spin (a second source for the culprit); -1: every rank spins alike.
void write_evidence(const std::string& dir, const std::string& scenario, int idle_rank) {
    const char* hosts[] = {"gpu-node-01", "gpu-node-02"};
    for (int node = 0; node < 2; ++node) {
        Json ranks = Json::array(), dumps = Json::array();
        for (int local = 0; local < 2; ++local) {
            const int rank = node * 2 + local;
            const bool idle = rank == idle_rank;
            ranks.push_back({{"rank", rank},
                             {"pid", 1000 + rank},
                             {"gpu", local},
                             {"gpu_state",
                              {{"utilization_pct", idle ? 0 : 100},
                               {"sm_active_pct", idle ? 0 : 1},
                               {"power_w", 90},
                               {"power_limit_w", 700},
                               {"xid", false}}},
                             {"main_thread",
                              {{"activity", idle ? "io_wait" : "spinning"},
                               {"state", idle ? "D" : "R"},
                               {"wchan", idle ? "nfs_wait" : ""},
                               {"cpu_share", idle ? 0.0 : 1.0}}}});
            FlightRecorderDump d;
            std::vector<std::string> warnings;
            std::string error;
            REQUIRE(read_flight_recorder_dump(
                read_job_file(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/" + scenario +
                              "/nccl_trace_rank_" + std::to_string(rank)),
                d, warnings, error));
            d.rank = rank;
            dumps.push_back({{"rank", rank}, {"outcome", "read"}, {"summary", to_json(d)}});
        }
        const Json doc = {{"schema", "stallscope.hang_evidence/1"},
                          {"host", hosts[node]},
                          {"step", "0"},
                          {"episode", 1},
                          {"ranks", ranks},
                          {"flight_recorder", {{"status", "dumped"}, {"dumps", dumps}}}};
        std::ofstream(dir + "/" + evidence_file_name("0", hosts[node], 1)) << doc.dump();
    }
}

// The 4-node fixture job (timelines only, verdicts replayed) in a fresh dir, with or without evidence.
std::string job_dir(const char* tag, const std::string& scenario = "", int idle_rank = -1) {
    const std::string dir = test::make_temp_dir(tag);
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242"))
        std::filesystem::copy_file(e.path(), dir + "/" + e.path().filename().string());
    if (!scenario.empty()) write_evidence(dir, scenario, idle_rank);
    return dir;
}

}  // namespace

TEST_CASE("a rank one collective behind: summary, report, HTML and comment name it first") {
    const std::string dir = job_dir("job-hang-behind", "behind-by-one", 2);
    const std::string culprit = "HANG culprit: rank 2 (gpu-node-02 GPU0 pid 1002) did not arrive at ";

    const auto summarize = run_process({kJobHangExe, "summarize", dir});
    REQUIRE_MESSAGE(summarize.exit_code == 0, summarize.err);
    const std::string text = read_job_file(dir + "/summary.txt");
    CHECK_MESSAGE(first_line(text).rfind(culprit, 0) == 0, text);
    const Json summary = Json::parse(read_job_file(dir + "/summary.json"));
    CHECK(summary["hang"]["kind"] == "culprit");
    CHECK(summary["hang"]["rank"] == 2);
    CHECK(summary["hang"]["host"] == "gpu-node-02");
    CHECK(summary["hang"]["files"].size() == 2);

    const auto report = run_process({kJobHangExe, "report", dir});
    REQUIRE(report.exit_code == 0);
    CHECK_MESSAGE(first_line(report.out).rfind(culprit, 0) == 0, report.out);
    const auto json = run_process({kJobHangExe, "report", dir, "--json"});
    CHECK(Json::parse(json.out)["hang"]["rank"] == 2);

    const auto html = run_process({kJobHangExe, "report", dir, "--html", dir + "/report.html"});
    REQUIRE_MESSAGE(html.exit_code == 0, html.err);
    const std::string page = read_job_file(dir + "/report.html");
    const auto banner = page.find("<p id=hang class=alarm><b>HANG culprit: rank 2 (gpu-node-02 GPU0");
    CHECK(banner != std::string::npos);
    CHECK(banner < page.find("id=top-reason"));  // before the root cause

    const auto comment = run_process({kJobHangExe, "report", dir, "--comment"});
    REQUIRE(comment.exit_code == 0);
    INFO(comment.out);
    CHECK(comment.out.find(" hang=culprit:rank2@gpu-node-02/gpu0\n") != std::string::npos);
    const auto seg = parse_comment_segment(first_line(comment.out));
    REQUIRE(seg);
    CHECK(seg->hang == "culprit:rank2@gpu-node-02/gpu0");
    CHECK(seg->label == "FAIL_RISK");  // the other keys still read: hang= comes last
    std::filesystem::remove_all(dir);
}

TEST_CASE("every rank inside the collective: the summary says to look at the fabric") {
    const std::string dir = job_dir("job-hang-inside", "all-inside");
    REQUIRE(run_process({kJobHangExe, "summarize", dir}).exit_code == 0);
    const std::string line = first_line(read_job_file(dir + "/summary.txt"));
    CHECK_MESSAGE(line.rfind("HANG: all 4 ranks waiting inside the collective", 0) == 0, line);
    CHECK(line.find(": look at the fabric") != std::string::npos);
    CHECK(Json::parse(read_job_file(dir + "/summary.json"))["hang"]["kind"] == "all_waiting");
    const auto comment = run_process({kJobHangExe, "report", dir, "--comment"});
    CHECK_MESSAGE(comment.out.find(" hang=all_waiting\n") != std::string::npos, comment.out);
    std::filesystem::remove_all(dir);
}

TEST_CASE("no evidence files: no hang line, hang null, no hang= in the comment") {
    const std::string dir = job_dir("job-no-hang");
    REQUIRE(run_process({kJobHangExe, "summarize", dir}).exit_code == 0);
    CHECK(first_line(read_job_file(dir + "/summary.txt")).rfind("Job 4242", 0) == 0);
    CHECK(Json::parse(read_job_file(dir + "/summary.json"))["hang"].is_null());
    CHECK(run_process({kJobHangExe, "report", dir, "--comment"}).out.find("hang=") == std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("the job writer's merged comment segment names the culprit") {
    const std::string dir = test::make_temp_dir("job-hang-writer") + "/stallscope-4242";
    std::filesystem::create_directories(dir);
    write_evidence(dir, "behind-by-one", 2);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string node = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/dgx-h100";
    const int pid = test::start_process(
        {kJobHangExe, "record", "--out-dir", dir, "--interval-seconds", "0.05", "--count", "3",
         "--liveness-fd", "3", "--job-writer", "--merge-wait-seconds", "0"},
        {"STALLSCOPE_PROCFS_ROOT=" + node + "/proc", "STALLSCOPE_SYSFS_ROOT=" + node + "/sys",
         "STALLSCOPE_NVML_LIBRARY=" FAKE_NVML_PATH, "STALLSCOPE_FAKE_NVML_FIXTURE=" + node + "/nvml.json",
         "STALLSCOPE_NVIDIA_SMI=/nonexistent", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0"},
        fds[1]);
    ::close(fds[1]);
    std::string out;
    char buf[2048];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    CHECK(test::wait_process(pid, 30) == 0);
    // Two lines: the node's own segment, then the job's; only the job's (the merge) reads the evidence.
    const auto first_end = out.find('\n');
    REQUIRE(first_end != std::string::npos);
    const std::string job_segment = out.substr(first_end + 1);
    INFO(out);
    CHECK(out.substr(0, first_end).find("hang=") == std::string::npos);
    CHECK(job_segment.find(" hang=culprit:rank2@gpu-node-02/gpu0\n") != std::string::npos);
    CHECK(first_line(read_job_file(dir + "/summary.txt")).rfind("HANG culprit: rank 2 ", 0) == 0);
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}
