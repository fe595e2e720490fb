// The capture end to end on this machine: real FIFOs, a child process that behaves like PyTorch's
// monitor thread (mkfifo, open O_RDONLY|O_NONBLOCK, poll, dump on a byte), real /proc; the evidence file
// read back and merged into the job's finding.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "libstallscope/hang/hang_capture.h"
#include "libstallscope/hang/hang_merge.h"

using namespace stallscope;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/stallscope-hang-capture-XXXXXX";
        REQUIRE(::mkdtemp(tmpl));
        path = tmpl;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

struct CaptureChild {
    pid_t pid = -1;
    ~CaptureChild() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

// What ProcessGroupNCCL's monitor does with TORCH_NCCL_DEBUG_INFO_PIPE_FILE: a FIFO opened O_RDONLY |
// O_NONBLOCK, polled; a byte read -> the dump written to the temp-file prefix + rank (in place, as
// DebugInfoWriter's ofstream does). `dump` empty: reads the byte and never dumps (a stuck GIL).
pid_t start_monitor(const std::string& pipe, const std::string& dump_path, const std::string& dump) {
    ::unlink(pipe.c_str());
    REQUIRE(::mkfifo(pipe.c_str(), 0666) == 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int fd = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
        for (int i = 0; i < 400; ++i) {
            char buf[128];
            if (::read(fd, buf, sizeof buf) > 0 && !dump.empty()) {
                const int out = ::open(dump_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                // Half, a pause, the rest: the reader must not take a half-written dump.
                [[maybe_unused]] auto a = ::write(out, dump.data(), dump.size() / 2);
                ::usleep(150000);
                [[maybe_unused]] auto b =
                    ::write(out, dump.data() + dump.size() / 2, dump.size() - dump.size() / 2);
                ::close(out);
            }
            ::usleep(50000);
        }
        ::_exit(0);
    }
    // The FIFO exists before we return; give the child time to open it for reading.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return pid;
}

CaptureRequest request_in(const TempDir& dir, std::vector<pid_t> pids) {
    CaptureRequest req;
    req.out_dir = dir.path;
    req.step = "0";
    req.host = "node-a";
    req.episode = 1;
    req.pids = std::move(pids);
    req.budget.max_wall_seconds = 8;
    req.budget.proc_gap_seconds = 0.2;
    return req;
}

}  // namespace

TEST_CASE("a hang: the dump is asked through the FIFO, copied, summarised; a FIFO without reader says so") {
    TempDir dir;
    const std::string fixture =
        read_file(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/behind-by-one/nccl_trace_rank_2");
    REQUIRE(!fixture.empty());
    CaptureChild monitor{start_monitor(dir.path + "/frpipe_2.pipe", dir.path + "/fr_dump_2", fixture)};
    REQUIRE(::mkfifo((dir.path + "/frpipe_3.pipe").c_str(), 0666) == 0);  // rank 3: nobody reads

    CaptureRequest req = request_in(dir, {monitor.pid});
    req.flight_recorder = FlightRecorderPaths{dir.path + "/frpipe_", dir.path + "/fr_dump_", false};
    const CaptureResult r = capture_hang_evidence(req);
    CHECK(r.written);
    CHECK(r.flight_recorder == "dumped");
    CHECK(r.dumps == 1);
    CHECK(r.parsed_bytes == fixture.size());
    CHECK(r.wall_seconds < 8);
    CHECK(r.cpu_seconds < 1);
    CHECK(r.path == dir.path + "/evidence.0.node-a.1.json");

    const Json doc = Json::parse(read_file(r.path));
    CHECK(doc["schema"] == "stallscope.hang_evidence/1");
    const Json& fr = doc["flight_recorder"];
    REQUIRE(fr["requests"].size() == 2);
    CHECK(fr["requests"][0]["rank"] == 2);
    CHECK(fr["requests"][0]["outcome"] == "requested");
    CHECK(fr["requests"][1]["rank"] == 3);
    CHECK(fr["requests"][1]["outcome"] == "no_reader");
    REQUIRE(fr["dumps"].size() == 1);
    CHECK(fr["dumps"][0]["outcome"] == "read");
    CHECK(fr["dumps"][0]["summary"]["groups"][0]["last_enqueued_collective"] == 20584);
    // The raw dump kept byte for byte, under our name (the rank overwrites its own on the next dump).
    CHECK(read_file(fr["dumps"][0]["copy"].get<std::string>()) == fixture);
    CHECK(doc["proc"]["processes"].size() == 1);
    CHECK(doc["capture"]["max_wall_seconds"] == 8);
}

TEST_CASE("past the CPU budget a dump is still copied, but not parsed") {
    TempDir dir;
    const std::string fixture =
        read_file(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/all-inside/nccl_trace_rank_0");
    CaptureChild monitor{start_monitor(dir.path + "/frpipe_0.pipe", dir.path + "/fr_dump_0", fixture)};
    CaptureRequest req = request_in(dir, {monitor.pid});
    req.flight_recorder = FlightRecorderPaths{dir.path + "/frpipe_", dir.path + "/fr_dump_", false};
    req.budget.max_cpu_seconds = 0;
    const CaptureResult r = capture_hang_evidence(req);
    CHECK(r.flight_recorder == "dumped");
    CHECK(r.parsed_bytes == 0);
    const Json doc = Json::parse(read_file(r.path));
    const Json& dump = doc["flight_recorder"]["dumps"][0];
    CHECK(dump["outcome"] == "not_parsed_cpu_budget");
    CHECK_FALSE(dump.contains("summary"));
    CHECK(read_file(dump["copy"].get<std::string>()) == fixture);
}

TEST_CASE("a job without PyTorch: the capture still has /proc, and says there is no flight recorder") {
    TempDir dir;
    CaptureChild sleeper{::fork()};
    if (sleeper.pid == 0) {
        ::pause();
        ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // in pause() by now
    CaptureRequest req = request_in(dir, {sleeper.pid});
    const CaptureResult r = capture_hang_evidence(req);  // paths from the child's (our) environment: none
    CHECK(r.written);
    CHECK(r.flight_recorder == "no_flight_recorder");
    const Json doc = Json::parse(read_file(r.path));
    REQUIRE(doc["proc"]["processes"].size() == 1);
    CHECK(doc["proc"]["processes"][0]["threads"][0]["state"].get<std::string>().back() == 'S');
}

TEST_CASE("a job that set its buffer to 0: nothing asked, recorded as buffer_off") {
    using namespace std::string_literals;
    const FlightRecorderPaths p = flight_recorder_paths_from_environ(
        "TORCH_NCCL_TRACE_BUFFER_SIZE=0\0TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/run/x/frpipe_\0"
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/old/\0TORCH_FR_DUMP_TEMP_FILE=/new/rank_\0"s);
    CHECK(p.buffer_off);
    CHECK(p.pipe_prefix == "/run/x/frpipe_");
    CHECK(p.dump_prefix == "/new/rank_");  // TORCH_FR_DUMP_TEMP_FILE first, as PyTorch 2.8+ reads them
    TempDir dir;
    CaptureRequest req = request_in(dir, {});
    req.flight_recorder = p;
    CHECK(capture_hang_evidence(req).flight_recorder == "buffer_off");
}

TEST_CASE("an old dump is not taken for the new one; a rank that never dumps times out in budget") {
    TempDir dir;
    const std::string old_dump = dir.path + "/fr_dump_0";
    { std::ofstream(old_dump) << "old"; }
    const timespec long_ago[2] = {{1000, 0}, {1000, 0}};
    REQUIRE(::utimensat(AT_FDCWD, old_dump.c_str(), long_ago, 0) == 0);
    CaptureChild monitor{start_monitor(dir.path + "/frpipe_0.pipe", old_dump, "")};
    CaptureRequest req = request_in(dir, {monitor.pid});
    req.flight_recorder = FlightRecorderPaths{dir.path + "/frpipe_", dir.path + "/fr_dump_", false};
    req.budget.max_wall_seconds = 3;
    const CaptureResult r = capture_hang_evidence(req);
    CHECK(r.flight_recorder == "timeout");
    CHECK(r.wall_seconds < 3.5);
    CHECK(r.written);
}

TEST_CASE("episodes: one capture when the hang is confirmed, a new one only after it cleared") {
    HangEpisodes e;
    const bool seq[] = {false, true, true, false, true, false, false, false, true, true};
    const bool want[] = {false, true, false, false, false, false, false, false, true, false};
    for (std::size_t i = 0; i < std::size(seq); ++i) {
        CAPTURE(i);
        CHECK(e.confirmed(seq[i]) == want[i]);
    }
    CHECK(e.episode() == 2);
    Profile p;
    p.reasons.push_back(Reason{"gpu_busy_wait_hang", "gpu", "critical", kLabelFailRisk, "", "", {}, 0});
    HangEpisodes f;
    CHECK(f.confirmed(p));
    CHECK(is_hang_reason("nccl_collective_hang"));
    CHECK_FALSE(is_hang_reason("gpu_idle"));
}

TEST_CASE("the capture thread: one at a time, the result taken once, stop bounded") {
    TempDir dir;
    HangEvidenceCapture capture;
    CaptureRequest req = request_in(dir, {});
    req.budget.proc_gap_seconds = 0.3;
    REQUIRE(capture.start(req));
    CHECK(capture.running());
    CHECK_FALSE(capture.start(req));
    CHECK_FALSE(capture.take_result().has_value());
    for (int i = 0; i < 300 && capture.running(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto r = capture.take_result();
    REQUIRE(r.has_value());
    CHECK(r->written);
    CHECK_FALSE(capture.take_result().has_value());
    REQUIRE(capture.start(req));
    const auto t0 = std::chrono::steady_clock::now();
    capture.stop(5);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
}

TEST_CASE("the job merge: evidence files of two nodes name rank 2 from its dump and its idle GPU") {
    TempDir dir;
    const char* hosts[] = {"node-a", "node-b"};
    for (int node = 0; node < 2; ++node) {
        Json ranks = Json::array(), dumps = Json::array();
        for (int local = 0; local < 2; ++local) {
            const int rank = node * 2 + local;
            const bool late = rank == 2;
            ranks.push_back({{"rank", rank},
                             {"pid", 100 + rank},
                             {"gpu", local},
                             {"gpu_state",
                              {{"utilization_pct", late ? 0 : 100},
                               {"sm_active_pct", late ? 0 : 1},
                               {"power_w", 90},
                               {"power_limit_w", 700},
                               {"xid", false}}},
                             {"main_thread",
                              {{"activity", late ? "io_wait" : "spinning"},
                               {"state", late ? "D" : "R"},
                               {"wchan", late ? "nfs_wait" : ""},
                               {"cpu_share", late ? 0.0 : 1.0}}}});
            FlightRecorderDump d;
            std::vector<std::string> warnings;
            std::string error;
            REQUIRE(read_flight_recorder_dump(
                read_file(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/behind-by-one/nccl_trace_rank_" +
                          std::to_string(rank)),
                d, warnings, error));
            d.rank = rank;
            dumps.push_back({{"rank", rank}, {"outcome", "read"}, {"summary", to_json(d)}});
        }
        Json doc = {{"schema", "stallscope.hang_evidence/1"},
                    {"host", hosts[node]},
                    {"ranks", ranks},
                    {"flight_recorder", {{"dumps", dumps}}}};
        std::ofstream(dir.path + "/" + evidence_file_name("0", hosts[node], 1)) << doc.dump();
        // An older episode of the same node: ignored for the newest.
        std::ofstream(dir.path + "/" + evidence_file_name("0", hosts[node], 0)) << "{}";
    }
    std::ofstream(dir.path + "/evidence.0.node-c.1.json") << "{ torn";
    const JobHangEvidence job = read_job_hang_evidence(dir.path);
    CHECK(job.files.size() == 2);     // node-a and node-b, newest episode each
    CHECK(job.warnings.size() == 1);  // the torn file, named
    CHECK(job.finding.kind == HangFindingKind::culprit);
    CHECK(job.finding.rank == 2);
    CHECK(job.finding.host == "node-b");
    CHECK(job.finding.sources == std::vector<std::string>{"flight_recorder", "gpu", "proc"});
}
