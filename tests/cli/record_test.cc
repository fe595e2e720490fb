// `stallscope record` as the SPANK plugin runs it, then replay/report/summarize on what it wrote.
#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "libstallscope/rules/profiler.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

std::vector<std::string> job_env(const std::string& node) {
    const std::string root = std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/" + node;
    return {"STALLSCOPE_PROCFS_ROOT=" + root + "/proc",
            "STALLSCOPE_SYSFS_ROOT=" + root + "/sys",
            "STALLSCOPE_ETHTOOL_ROOT=" + root + "/ethtool",
            "STALLSCOPE_NVML_LIBRARY=" FAKE_NVML_PATH,
            "STALLSCOPE_FAKE_NVML_FIXTURE=" + root + "/nvml.json",
            "STALLSCOPE_NVIDIA_SMI=/nonexistent",
            "SLURM_JOB_ID=4242",
            "SLURM_STEP_ID=0",
            "SLURM_NODEID=0",
            "SLURM_JOB_NODELIST=gpu-node-07",
            "SLURM_STEP_GPUS=",
            "SLURM_JOB_GPUS="};
}

Json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), path);
    return Json::parse(in);
}

// A timeline's lines as JSON, through `stallscope export` (the documented way to read a v2 .jsonl.zst).
std::vector<Json> timeline_lines(const std::string& path) {
    const auto r = run_process({STALLSCOPE_EXE, "export", path});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::vector<Json> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
    return lines;
}

// Whether `dir` holds a file named prefix*, without a process (polled every 50 ms).
bool has_file_starting(const std::string& dir, const std::string& prefix) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return false;
    bool found = false;
    while (const dirent* e = ::readdir(d))
        if (std::string_view(e->d_name).starts_with(prefix)) found = true;
    ::closedir(d);
    return found;
}

std::string only_file(const std::string& dir, const std::string& prefix) {
    const auto r = run_process({"/bin/ls", dir});
    std::istringstream in(r.out);
    std::string name;
    while (in >> name)
        if (name.rfind(prefix, 0) == 0) return dir + "/" + name;
    return "";
}

}  // namespace

TEST_CASE("record writes a timeline and a verdict that replay reproduces byte for byte") {
    const std::string out = make_temp_dir("rec") + "/stallscope-4242";
    const auto r = run_process(
        {STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05", "--count", "4"},
        job_env("dgx-h100"));
    REQUIRE(r.exit_code == 0);
    const std::string timeline = only_file(out, "timeline.0.");
    const std::string verdict = only_file(out, "verdict.0.");
    REQUIRE_FALSE(timeline.empty());
    CHECK(timeline.size() > 4);
    CHECK(timeline.substr(timeline.size() - 10) == ".jsonl.zst");  // v2 is the default
    REQUIRE_FALSE(verdict.empty());
    const Json v = read_json(verdict);
    CHECK(v["schema"] == "stallscope.verdict/1");
    CHECK(v["job_id"] == "4242");
    CHECK(v["inventory"]["gpus"].size() == 8);
    CHECK(v["verdict"]["samples"] == 4);

    const auto replay = run_process({STALLSCOPE_EXE, "replay", timeline, "--json"});
    REQUIRE(replay.exit_code == 0);
    const Json rj = Json::parse(replay.out);
    CHECK(rj["matches_recorded"] == true);
    CHECK(rj["label"] == v["verdict"]["label"]);

    const auto report = run_process({STALLSCOPE_EXE, "report", out});
    CHECK(report.exit_code == 0);
    CHECK(report.out.find("Job 4242") != std::string::npos);
    CHECK(report.out.find("Fabric ports") != std::string::npos);
    const auto summarize = run_process({STALLSCOPE_EXE, "summarize", out});
    CHECK(summarize.exit_code == 0);
    const Json summary = read_json(out + "/summary.json");
    CHECK(summary["nodes"].size() == 1);
    CHECK(summary["gpus"].size() == 8);
}

TEST_CASE("SIGTERM stops the helper within a second, with the verdict written and the segment on fd 3") {
    const std::string out = make_temp_dir("term") + "/stallscope-4242";
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    // slurmstepd starts its children with SIGTERM blocked; the helper must unblock it itself.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    const int pid = start_process(
        {STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "30", "--liveness-fd", "3"},
        job_env("roce"), pipe_fds[1]);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ::close(pipe_fds[1]);
    // Two of the 1 s start-up samples, counted from the timeline's creation (written just before the
    // first sample), not from the exec: a loaded CI machine took over 1 s to start the ASan binary.
    for (int i = 0; i < 200 && !has_file_starting(out, "timeline.0."); ++i) ::usleep(50'000);
    ::usleep(1'600'000);
    ::kill(pid, SIGTERM);
    const auto stopped_at = std::chrono::steady_clock::now();
    std::string segment;
    char buf[2048];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;)
        segment.append(buf, static_cast<std::size_t>(n));
    const double stop_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
    ::close(pipe_fds[0]);
    CHECK(wait_process(pid, 5) == 0);
    CHECK(stop_seconds < 1.5);
    CHECK(segment.rfind("stallscope/1 ", 0) == 0);
    CHECK(segment.find(" file=" + out + "/verdict.0.") != std::string::npos);
    const Json v = read_json(only_file(out, "verdict.0."));
    CHECK(v["verdict"]["samples"].get<int>() >= 2);
}

TEST_CASE("a helper stopped (SIGSTOP) until the step ends: woken by the stop, the verdict names the gap") {
    const std::string out = make_temp_dir("stopped") + "/stallscope-4242";
    const int pid = start_process({STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.2"},
                                  job_env("vm"), -1);
    ::usleep(1000000);
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    ::sleep(6);  // > the 5.2 s gap threshold at a 0.2 s interval
    // What the plugin does at the step's end: SIGTERM, then SIGCONT so the stopped helper can act on it.
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);
    CHECK(wait_process(pid, 5) == 0);
    const Json v = read_json(only_file(out, "verdict.0."));
    bool warned = false;
    for (const auto& w : v["warnings"])
        warned = warned || w.get<std::string>().find("before the stop (from ") != std::string::npos;
    CHECK_MESSAGE(warned, v["warnings"].dump());
    int gap_events = 0;
    for (const Json& j : timeline_lines(only_file(out, "timeline.0."))) {
        if (j["type"] == "event" && j["kind"] == "sampling_gap") {
            ++gap_events;
            CHECK(j["until_stop"] == true);
            CHECK(j["seconds"].get<double>() >= 5.5);
        }
    }
    CHECK(gap_events == 1);
}

TEST_CASE("a second step of the same job finds the node lock taken and does not sample") {
    const std::string dir = make_temp_dir("lock");
    const std::string lock = dir + "/sampler.lock";
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    const auto r = run_process({STALLSCOPE_EXE, "record", "--out-dir", dir + "/out", "--interval-seconds",
                                "0.05", "--count", "2", "--lock-file", lock},
                               job_env("vm"), 10);
    ::close(fd);
    CHECK(r.exit_code == 0);
    CHECK(r.seconds < 2);
    struct stat st {};
    CHECK(::stat((dir + "/out").c_str(), &st) != 0);  // nothing written
}

TEST_CASE("an unwritable output dir falls back to a private dir and the verdict says so") {
    const std::string tmp = make_temp_dir("fallback");
    const auto r = run_process({STALLSCOPE_EXE, "record", "--out-dir", "/proc/stallscope-4242",
                                "--interval-seconds", "0.05", "--count", "2"},
                               [&] {
                                   auto env = job_env("vm");
                                   env.push_back("TMPDIR=" + tmp);
                                   return env;
                               }());
    REQUIRE(r.exit_code == 0);
    const std::string fallback = tmp + "/stallscope-" + std::to_string(::getuid()) + "/stallscope-4242";
    const Json v = read_json(only_file(fallback, "verdict.0."));
    REQUIRE(v["warnings"].size() >= 1);
    CHECK(v["warnings"][0].get<std::string>().find("not writable") != std::string::npos);
}

namespace {

// The helper fills a 64 KiB tmpfs (less `filler` bytes) mid-step, ENOSPC in the middle of a write.
void disk_fills_up(const std::string& format, std::size_t filler, int count) {
    if (::geteuid() != 0) {
        MESSAGE("skipped: mounting a small tmpfs needs root");
        return;
    }
    const std::string tmp = make_temp_dir("full");
    const std::string disk = tmp + "/disk";
    REQUIRE(::mkdir(disk.c_str(), 0755) == 0);
    REQUIRE(run_process({"/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk}).exit_code == 0);
    if (filler > 0) std::ofstream(disk + "/filler") << std::string(filler, 'x');
    const auto r = run_process(
        {STALLSCOPE_EXE, "record", "--out-dir", disk + "/stallscope-4242", "--interval-seconds", "0.02",
         "--count", std::to_string(count), "--timeline-format", format},
        [&] {
            auto env = job_env("vm");
            env.push_back("TMPDIR=" + tmp);
            return env;
        }(),
        30);
    std::string left_on_disk;
    if (DIR* d = ::opendir((disk + "/stallscope-4242").c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string(e->d_name).rfind("timeline.", 0) == 0) left_on_disk += e->d_name;
        ::closedir(d);
    }
    run_process({"/bin/umount", disk});
    REQUIRE(r.exit_code == 0);
    CHECK(left_on_disk.empty());  // moved, giving the full disk its space back
    const std::string fallback = tmp + "/stallscope-" + std::to_string(::getuid()) + "/stallscope-4242";
    const std::string timeline = only_file(fallback, "timeline.0.");
    int samples = 0, headers = 0, verdicts = 0;
    // Every line complete: v1 drops the torn line and rewrites it; v2 skips the torn block and the reopened
    // writer starts a new frame (with the header again, which export passes on once).
    for (const Json& j : timeline_lines(timeline)) {
        samples += j["type"] == "sample";
        headers += j["type"] == "header";
        verdicts += j["type"] == "verdict";
    }
    CHECK(samples == count);
    CHECK(headers == 1);
    CHECK(verdicts == 1);
    const Json v = read_json(only_file(fallback, "verdict.0."));
    REQUIRE(v["warnings"].size() >= 1);
    const std::string warning = v["warnings"].back().get<std::string>();
    CHECK(warning.find("No space left on device") != std::string::npos);
    CHECK(warning.find("moved it (every complete line) to " + timeline) != std::string::npos);
    const auto replay = run_process({STALLSCOPE_EXE, "replay", timeline, "--json"});
    CHECK(Json::parse(replay.out)["matches_recorded"] == true);
    // Nothing damaged: the moved file ends where the last whole write ended (the writer takes back the
    // part of the failed one that fit), so the reader sees an unfinished frame, then the new one. Bytes
    // of a torn block followed by the new frame decoded as more of the old frame (6 runs in 20 had
    // samples from nowhere, 12 more a record that did not read).
    CAPTURE(replay.err);
    CHECK(replay.err.find("damaged") == std::string::npos);
    CHECK(replay.err.find("does not read") == std::string::npos);
}

}  // namespace

TEST_CASE("a disk that fills up during the step: the v1 timeline moves to the fallback dir, nothing lost") {
    disk_fills_up("1", 0, 60);  // 64 KiB: the header and a dozen samples of ~1.7 KB, then ENOSPC
}

TEST_CASE("a disk that fills up during the step: the v2 timeline moves to the fallback dir, nothing lost") {
    // ~25 B per sample: leave one 4 KiB page, which the first frame and ~100 samples fill.
    disk_fills_up("2", 60 * 1024, 200);
}

TEST_CASE("replay skips a torn last line of a v1 timeline with a warning and still gives a verdict") {
    const std::string out = make_temp_dir("torn") + "/stallscope-4242";
    REQUIRE(run_process({STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05", "--count",
                         "3", "--timeline-format", "1"},
                        job_env("vm"))
                .exit_code == 0);
    const std::string timeline = only_file(out, "timeline.0.");
    std::ofstream(timeline, std::ios::app) << R"({"type":"sample","unix_ti)";
    const auto replay = run_process({STALLSCOPE_EXE, "replay", timeline, "--json"});
    REQUIRE(replay.exit_code == 0);
    const Json rj = Json::parse(replay.out);
    CHECK(rj["replay_warnings"].size() == 1);
    CHECK(replay.err.find("torn last line") != std::string::npos);
}

namespace {

// A 3-sample v2 recording (helper stopped cleanly) with its last `cut` bytes taken off, replayed with --json.
ProcessResult replay_of_cut_recording(const char* name, off_t cut) {
    const std::string out = make_temp_dir(name) + "/stallscope-4242";
    REQUIRE(run_process(
                {STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05", "--count", "3"},
                job_env("vm"))
                .exit_code == 0);
    const std::string timeline = only_file(out, "timeline.0.");
    struct stat st {};
    REQUIRE(::stat(timeline.c_str(), &st) == 0);
    REQUIRE(::truncate(timeline.c_str(), st.st_size - cut) == 0);
    auto replay = run_process({STALLSCOPE_EXE, "replay", timeline, "--json"});
    REQUIRE(replay.exit_code == 0);
    return replay;
}

}  // namespace

TEST_CASE("replay of a v2 timeline cut short (helper killed mid-write) warns and keeps every sample before") {
    // The frame's end (an empty last block and a checksum: 7 bytes) and the tail of the block holding the
    // verdict line: that block is cut short.
    const auto replay = replay_of_cut_recording("torn2", 12);
    const Json rj = Json::parse(replay.out);
    CHECK(rj["samples"] == 3);
    CHECK(rj["matches_recorded"].is_null());  // the verdict line was in the block cut short
    REQUIRE(rj["replay_warnings"].size() == 1);
    CHECK(rj["replay_warnings"][0].get<std::string>().find("part-way through a block") != std::string::npos);
}

TEST_CASE("replay of a v2 timeline still being recorded reads every flushed sample and warns of nothing") {
    // Without the frame's end (7 bytes), the file is what a running helper (or one killed between two
    // samples) leaves: every line in a whole, flushed block. `report` on a running job reads such files.
    const auto replay = replay_of_cut_recording("live", 7);
    const Json rj = Json::parse(replay.out);
    CHECK(rj["samples"] == 3);
    CHECK(rj["matches_recorded"] == true);
    CHECK(rj["replay_warnings"].empty());
    CHECK(replay.err.empty());
}

TEST_CASE(
    "an NVML call that hangs makes the step UNKNOWN with the collector named, and the helper stops in time") {
    const std::string out = make_temp_dir("hang") + "/stallscope-4242";
    auto env = job_env("dgx-h100");
    env.push_back("STALLSCOPE_FAKE_NVML_SLEEP_MS=3000");  // every device query blocks 3 s
    const auto r = run_process({STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.1",
                                "--count", "6", "--driver-timeout", "0.2"},
                               env, 30);
    REQUIRE(r.exit_code == 0);
    CHECK(r.seconds < 5);  // six samples, none waiting for the hung driver beyond its deadline
    const Json v = read_json(only_file(out, "verdict.0."));
    CHECK(v["verdict"]["label"] == "UNKNOWN");
    bool named = false;
    for (const auto& reason : v["verdict"]["reasons"])
        named = named || (reason["code"] == "collector_failed" && reason["subject"] == "nvml" &&
                          reason["message"].get<std::string>().find("timed out") != std::string::npos);
    CHECK(named);
}

TEST_CASE("a step given 2 GPUs on a node without NVML says so in the report instead of showing 0 GPUs") {
    const std::string out = make_temp_dir("nogpu") + "/stallscope-4242";
    auto env = job_env("vm");
    env.push_back("SLURM_STEP_GPUS=0,1");
    env.push_back("STALLSCOPE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1");
    REQUIRE(
        run_process(
            {STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05", "--count", "2"}, env)
            .exit_code == 0);
    const auto report = run_process({STALLSCOPE_EXE, "report", out, "--json"});
    REQUIRE(report.exit_code == 0);
    const Json j = Json::parse(report.out);
    REQUIRE(j["notes"].size() >= 1);
    CHECK(j["notes"][0].get<std::string>().find("2 GPU(s) allocated but none measured") != std::string::npos);
    CHECK(j["notes"][0].get<std::string>().find("NVML unavailable") != std::string::npos);
}

TEST_CASE(
    "sample lines carry a compact summary, and a timeline with full per-sample profiles replays the same") {
    const std::string out = make_temp_dir("summary") + "/stallscope-4242";
    const auto r = run_process({STALLSCOPE_EXE, "record", "--out-dir", out, "--interval-seconds", "0.05",
                                "--count", "4", "--timeline-format", "1"},
                               job_env("dgx-h100"));
    REQUIRE(r.exit_code == 0);
    const std::string timeline = only_file(out, "timeline.0.");
    // The same recording as timelines were written before the summary: each sample with its full profile.
    const std::string old_format = timeline + ".old-format.jsonl";
    std::ifstream in(timeline);
    std::ofstream old(old_format);
    Profiler profiler;
    int samples = 0;
    for (std::string text; std::getline(in, text);) {
        Json line = Json::parse(text);
        if (line["type"] == "sample") {
            ++samples;
            REQUIRE(line.contains("summary"));
            CHECK_FALSE(line.contains("profile"));
            CHECK(line["summary"]["label"].is_string());
            CHECK(line["summary"]["confidence"].is_number());
            CHECK(line["summary"]["reasons"].is_array());
            for (const auto& reason : line["summary"]["reasons"]) CHECK(reason.is_string());
            std::vector<std::string> problems;
            const Profile profile = profiler.observe(snapshot_from_json(line, problems));
            CHECK(problems.empty());
            CHECK(line["summary"]["label"] == profile.label);  // what replay recomputes for that sample
            line.erase("summary");
            line["profile"] = to_json(profile);
        }
        old << line.dump() << "\n";
    }
    old.close();
    CHECK(samples == 4);

    const auto replay = run_process({STALLSCOPE_EXE, "replay", timeline, "--json"});
    const auto replay_old = run_process({STALLSCOPE_EXE, "replay", old_format, "--json"});
    REQUIRE(replay.exit_code == 0);
    REQUIRE(replay_old.exit_code == 0);
    Json now = Json::parse(replay.out), before = Json::parse(replay_old.out);
    CHECK(now["matches_recorded"] == true);
    CHECK(before["matches_recorded"] == true);
    CHECK(before["replay_warnings"].empty());
    now.erase("timeline");
    before.erase("timeline");
    CHECK(now == before);
}
