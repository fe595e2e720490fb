// spank/epilog.h: the job epilog's cleanup is never skipped (L1), the state a job can grow is capped (L1),
// the stale-summary scan is bounded and follows no symlink (L5), and what it logs is escaped (L6).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "spank/epilog.h"
#include "spank/escape.h"
#include "spank/helper_spec.h"
#include "spank/job_writer.h"
#include "spank/process.h"
#include "spank/state.h"

using namespace stallscope::spank;

namespace {

struct EpilogTempDir {
    std::string path;
    EpilogTempDir() {
        char tmpl[] = "/tmp/stallscope-epilog-test.XXXXXX";
        path = mkdtemp(tmpl);
        chmod(path.c_str(), 0755);  // a root-owned 0755 run_dir, as make_root_dir leaves it
    }
    ~EpilogTempDir() { remove_tree(path); }
};

void touch(const std::string& path, long mtime_s) {
    std::ofstream(path) << "x";
    timespec times[2] = {{mtime_s, 0}, {mtime_s, 0}};
    utimensat(AT_FDCWD, path.c_str(), times, 0);
}

struct Captured {
    std::vector<std::string> lines;
    EpilogLog log() {
        auto add = [this](const std::string& m) { lines.push_back(m); };
        return {add, add, add};
    }
    bool has(const std::string& part) const {
        for (const std::string& l : lines)
            if (l.find(part) != std::string::npos) return true;
        return false;
    }
};

std::vector<std::string> run_files(const std::string& run_dir, const std::string& job) {
    return {state_path(run_dir, job), result_path(run_dir, job),     comment_mark_path(run_dir, job),
            lock_path(run_dir, job),  batch_mark_path(run_dir, job), writer_mark_path(run_dir, job)};
}

bool none_left(const std::vector<std::string>& paths) {
    for (const std::string& p : paths)
        if (access(p.c_str(), F_OK) == 0) return false;
    return true;
}

}  // namespace

TEST_CASE(
    "L1: a job cannot grow its state past the reader's cap: directory length and total size are capped") {
    // The review's harness: 16 directories of 4 KiB (from SLURM_SUBMIT_DIR / PWD) made a 65956-byte state.
    JobState s{1000, 1000, {1000}, "/home/a/stallscope-123"};
    for (int i = 0; i < 16; ++i)
        add_out_dir(s, "/" + std::string(4094, 'a') + std::to_string(i) + "/stallscope-123");
    CHECK(all_out_dirs(s).size() == 1);  // none of them stored: longer than kMaxStoredDirBytes
    // '%' and control bytes escape to 3 bytes each: the cap is on the escaped form.
    CHECK_FALSE(storable_out_dir("/" + std::string(400, '\x01')));
    CHECK(storable_out_dir("/" + std::string(300, '%')));
    for (int i = 0; i < 40; ++i) add_out_dir(s, "/" + std::string(330, '%') + std::to_string(i));
    CHECK(all_out_dirs(s).size() == kMaxOutDirs);
    const std::string text = serialize_state(s);
    CHECK(!text.empty());
    CHECK(text.size() <= kMaxStateBytes);
    CHECK(kMaxStateBytes < kMaxRootFileBytes);
    // A user in very many groups: a directory that would push the state over the cap is not added.
    JobState crowded{1000, 1000, std::vector<gid_t>(2900, 1234567890), "/a"};
    REQUIRE(!serialize_state(crowded).empty());
    for (int i = 0; i < 16; ++i) add_out_dir(crowded, "/" + std::string(900, 'b') + std::to_string(i));
    CHECK(serialize_state(crowded).size() <= kMaxStateBytes);
    CHECK(all_out_dirs(crowded).size() < kMaxOutDirs);
}

TEST_CASE("L1: the epilog removes the job's run_dir files whatever the state file says") {
    EpilogTempDir run;
    PluginConfig config = default_config();
    config.run_dir = run.path;
    config.helper = "/nonexistent/stallscope";
    const std::vector<std::string> files = run_files(run.path, "123");
    SUBCASE("a state file over the reader's 64 KiB cap (written as the old plugin let a job make it)") {
        REQUIRE(write_root_file(state_path(run.path, "123"), "uid=" + std::to_string(getuid()) +
                                                                 "\ngid=1\ngroups=\nout_dir=/" +
                                                                 std::string(70000, 'a') + "\n") == "");
    }
    SUBCASE("a malformed state") {
        REQUIRE(write_root_file(state_path(run.path, "123"), "garbage") == "");
    }
    SUBCASE("a state of another uid") {
        REQUIRE(write_root_file(state_path(run.path, "123"), "uid=4242\ngid=1\ngroups=\nout_dir=/a\n") == "");
    }
    SUBCASE("no state at all") {}
    for (const std::string& f : files)
        if (access(f.c_str(), F_OK) != 0) REQUIRE(write_root_file(f, "1") == "");
    REQUIRE(mkdir(job_run_dir(config, "123").c_str(), 0700) == 0);  // the old user-owned <jobid>/ dir
    Captured c;
    run_job_epilog(config, "123", getuid(), c.log());
    CHECK(none_left(files));
    CHECK(access(job_run_dir(config, "123").c_str(), F_OK) != 0);
}

TEST_CASE("L5: the stale scan follows no symlink in any component, and says missing for a missing dir") {
    EpilogTempDir t;
    const std::string real = t.path + "/real", dir = real + "/stallscope-7";
    REQUIRE(mkdir(real.c_str(), 0755) == 0);
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    touch(dir + "/summary.json", 1000);
    touch(dir + "/verdict.0.n1.json", 2000);  // newer than the summary: stale
    const long later = monotonic_ms() + 10000;
    CHECK(summary_staleness(dir.c_str(), later, kStaleScanMaxEntries) == Staleness::stale);
    REQUIRE(symlink(real.c_str(), (t.path + "/link").c_str()) == 0);
    // The old scan opened the last component only with O_NOFOLLOW: through "link" it read "real".
    CHECK(summary_staleness((t.path + "/link/stallscope-7").c_str(), later, kStaleScanMaxEntries) ==
          Staleness::unknown);
    REQUIRE(symlink(dir.c_str(), (t.path + "/last").c_str()) == 0);
    CHECK(summary_staleness((t.path + "/last").c_str(), later, kStaleScanMaxEntries) == Staleness::unknown);
    CHECK(summary_staleness((dir + "/../stallscope-7").c_str(), later, kStaleScanMaxEntries) ==
          Staleness::unknown);
    CHECK(summary_staleness((t.path + "/nothing/here").c_str(), later, kStaleScanMaxEntries) ==
          Staleness::missing);
    touch(dir + "/summary.json", 3000);
    CHECK(summary_staleness(dir.c_str(), later, kStaleScanMaxEntries) == Staleness::current);
    // A symlink named like a verdict is not counted (not a regular file).
    REQUIRE(symlink("/etc/passwd", (dir + "/verdict.0.n2.json").c_str()) == 0);
    CHECK(summary_staleness(dir.c_str(), later, kStaleScanMaxEntries) == Staleness::current);
}

TEST_CASE("L5: the stale scan stops at its deadline and at its entry cap, before an answer") {
    EpilogTempDir t;
    const std::string dir = t.path + "/stallscope-8";
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    touch(dir + "/summary.json", 5000);
    // The deadline is checked before the scan: a spent deadline never opens the directory (a missing
    // directory would otherwise say "missing").
    CHECK(summary_staleness((t.path + "/absent").c_str(), monotonic_ms() - 1, kStaleScanMaxEntries) ==
          Staleness::unknown);
    CHECK(summary_staleness(dir.c_str(), monotonic_ms() - 1, kStaleScanMaxEntries) == Staleness::unknown);
    // Old timelines beyond the cap (the review's 100 000 entries, future-dated summary): unknown.
    for (int i = 0; i < 120; ++i) touch(dir + "/timeline." + std::to_string(i), 1000);
    CHECK(summary_staleness(dir.c_str(), monotonic_ms() + 10000, 1000) == Staleness::current);
    CHECK(summary_staleness(dir.c_str(), monotonic_ms() + 10000, 100) == Staleness::unknown);
    CHECK(kStaleScanMaxEntries <= 10000);
}

TEST_CASE("L5/L6: the epilog checks in a bounded child, summarizes what it cannot judge, logs escaped") {
    EpilogTempDir run;
    EpilogTempDir jobs;
    chmod(jobs.path.c_str(), 0777);
    PluginConfig config = default_config();
    config.run_dir = run.path;
    config.helper = "/nonexistent/stallscope";
    config.epilog_timeout = 5;
    // A job-chosen output directory (SLURM_SUBMIT_DIR / PWD) that forges log lines and carries escapes.
    const std::string hostile = jobs.path +
                                "/x\n[2026-11-27T00:00:00] error: forged\x1b]0;pwn\x07\xc2\x9b"
                                "2J";
    const uid_t uid = geteuid() == 0 ? 65534 : getuid();
    const gid_t gid = geteuid() == 0 ? 65534 : getgid();
    JobState state{uid, gid, {gid}, hostile + "/stallscope-9"};
    REQUIRE(mkdir(hostile.c_str(), 0777) == 0);
    REQUIRE(mkdir(state.out_dir.c_str(), 0777) == 0);
    touch(state.out_dir + "/verdict.0.n1.json", 2000);  // no summary: stale
    REQUIRE(write_root_file(state_path(run.path, "9"), serialize_state(state)) == "");
    REQUIRE(write_root_file(writer_mark_path(run.path, "9"), "1") == "");
    REQUIRE(write_root_file(result_path(run.path, "9"),
                            "/tmp/stallscope-" + std::to_string(uid) + "/\x1b[2J") == "");
    Captured c;
    const long t0 = monotonic_ms();
    run_job_epilog(config, "9", uid, c.log());
    CHECK(monotonic_ms() - t0 < 5000);
    REQUIRE_FALSE(c.lines.empty());
    for (const std::string& line : c.lines) {
        INFO(line);
        CHECK(line.find('\n') == std::string::npos);
        CHECK(line.find('\x1b') == std::string::npos);
        CHECK(line.find('\x07') == std::string::npos);
        CHECK(line.find("\xc2\x9b") == std::string::npos);
    }
    CHECK(c.has(escape(hostile)));  // the summarize attempt names the directory, escaped
    CHECK(none_left(run_files(run.path, "9")));
}
