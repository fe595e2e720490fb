#include "libstallscope/timeline/job_comment.h"

#include <doctest/doctest.h>

using namespace stallscope;

namespace {
StepVerdict slow_verdict() {
    StepVerdict v;
    v.label = kLabelSlow;
    v.confidence = 0.8;
    v.start_time = 1000;
    v.end_time = 4600;
    v.samples = 120;
    ReasonSummary r;
    r.reason.code = "fabric_congestion";
    r.reason.subject = "mlx5_0/1";
    v.reasons.push_back(r);
    return v;
}
}  // namespace

TEST_CASE("the comment segment is compact, versioned and names the root cause") {
    const auto s =
        compose_comment_segment(slow_verdict(), 8, "gpu07", "/home/u/run/stallscope-42/verdict.0.gpu07.json");
    CHECK(s ==
          "stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=3600 node=gpu07 "
          "file=/home/u/run/stallscope-42/verdict.0.gpu07.json");
    CHECK(s.size() <= 256);
}

TEST_CASE("a path with spaces is encoded so the segment stays one key=value list, and parses back") {
    const auto s = compose_comment_segment(slow_verdict(), 2, "n1", "/home/u/my run/v.json");
    CHECK(s.find("file=/home/u/my%20run/v.json") != std::string::npos);
    auto seg = parse_comment_segment("JS1:H4sIAAAA; " + s);
    REQUIRE(seg);
    CHECK(seg->label == "SLOW");
    CHECK(seg->confidence == doctest::Approx(0.8));
    CHECK(seg->top == "fabric_congestion:mlx5_0/1");
    CHECK(seg->gpus == 2);
    CHECK(seg->duration_seconds == doctest::Approx(3600));
    CHECK(seg->file == "/home/u/my run/v.json");
}

TEST_CASE("a very long path is dropped rather than exceeding the comment limit") {
    const auto s = compose_comment_segment(slow_verdict(), 8, "n1", "/" + std::string(2000, 'a'));
    CHECK(s.size() <= kCommentMaxLength);
    CHECK(s.find("file=") == std::string::npos);
}

TEST_CASE("an UNKNOWN verdict names its unknown reason as top") {
    StepVerdict v;
    v.unknown_reasons = {"step_too_short"};
    CHECK(compose_comment_segment(v, 0, "", "").find("UNKNOWN conf=0.00 top=step_too_short gpus=0 dur=0") !=
          std::string::npos);
}

TEST_CASE("comments without our segment, or with garbage after it, parse safely") {
    CHECK_FALSE(parse_comment_segment("JS1:abc"));
    CHECK_FALSE(parse_comment_segment(""));
    auto seg = parse_comment_segment("stallscope/1 FAST conf=zz top=x");
    REQUIRE(seg);
    CHECK(seg->label == "FAST");
    CHECK(seg->top.empty());  // parsing stopped at the bad value
}

TEST_CASE("a segment lowercased by sacctmgr (post-job epilog path) still parses with an upper-case label") {
    auto seg =
        parse_comment_segment("js1:abc; stallscope/1 fail_risk conf=0.90 top=gpu_xid_critical:gpu-1 gpus=8");
    REQUIRE(seg);
    CHECK(seg->label == "FAIL_RISK");
    CHECK(seg->top == "gpu_xid_critical:gpu-1");
}

TEST_CASE("our segment followed by another tool's segment (joined with '; ' by the plugin) parses cleanly") {
    auto seg =
        parse_comment_segment("stallscope/1 SLOW conf=0.80 top=x gpus=2 dur=60 file=/a/v.json; JS1:dur=9");
    REQUIRE(seg);
    CHECK(seg->file == "/a/v.json");
    CHECK(seg->duration_seconds == 60);
}

TEST_CASE("a node segment shows GPUs as measured/allocated when Slurm allocated some") {
    const auto s = compose_comment_segment(slow_verdict(), 0, "n1", "", 2);
    CHECK(s.find(" gpus=0/2 ") != std::string::npos);
    auto seg = parse_comment_segment(s);
    REQUIRE(seg);
    CHECK(seg->gpus == 0);
    CHECK(seg->gpus_allocated == 2);
    CHECK(parse_comment_segment("stallscope/1 FAST conf=0.9 gpus=8")->gpus_allocated == -1);
}

TEST_CASE(
    "the job segment names the root cause with its node, missing and straggler nodes, and parses back") {
    JobCommentFacts f;
    f.label = kLabelFailRisk;
    f.confidence = 0.9;
    f.top = "fabric_port_down:n2:mlx5_0/1";
    f.nodes = 3;
    f.missing = {"n3"};
    f.stragglers = {"n1"};
    f.gpus_measured = 16;
    f.duration_seconds = 120.4;
    f.node = "n2";
    f.file = "/scratch/u/stallscope-7/summary.json";
    const auto s = compose_job_comment_segment(f);
    CHECK(
        s ==
        "stallscope/1 FAIL_RISK conf=0.90 top=fabric_port_down:n2:mlx5_0/1 nodes=3 missing=n3 stragglers=n1 "
        "gpus=16 dur=120 node=n2 file=/scratch/u/stallscope-7/summary.json");
    const auto seg = parse_comment_segment("JS1:abc; " + s + "; other=1");
    REQUIRE(seg);
    CHECK(seg->label == "FAIL_RISK");
    CHECK(seg->top == "fabric_port_down:n2:mlx5_0/1");
    CHECK(seg->nodes == 3);
    CHECK(seg->missing == std::vector<std::string>{"n3"});
    CHECK(seg->stragglers == std::vector<std::string>{"n1"});
    CHECK(seg->node == "n2");
    CHECK(seg->file == "/scratch/u/stallscope-7/summary.json");
}

TEST_CASE("a job segment with 1000 straggler and missing nodes stays short: whole names, then a count") {
    JobCommentFacts f;
    f.label = kLabelSlow;
    f.nodes = 2000;
    for (int i = 0; i < 1000; ++i) {
        f.missing.push_back("gpu-node-" + std::to_string(i));
        f.stragglers.push_back("gpu-node-" + std::to_string(1000 + i));
    }
    f.file = "/p/summary.json";
    const auto s = compose_job_comment_segment(f);
    CHECK(s.size() <= 256);
    CHECK(s.find(" file=/p/summary.json") != std::string::npos);
    const auto seg = parse_comment_segment(s);
    REQUIRE(seg);
    REQUIRE(seg->missing.size() >= 2);
    CHECK(seg->missing.front() == "gpu-node-0");
    CHECK(seg->missing.back().rfind('+', 0) == 0);  // "+N" more
    const int shown = static_cast<int>(seg->missing.size()) - 1;
    CHECK(seg->missing.back() == "+" + std::to_string(1000 - shown));
    f.file = "/" + std::string(3000, 'a');
    CHECK(compose_job_comment_segment(f).size() <= kCommentMaxLength);
}

TEST_CASE(
    "only a whole segment is ours: stallscope/1 text inside another segment is never read (issue 36, M1)") {
    // The review's forged value: a job-chosen text ahead of the real segment, in the same "; " segment.
    const std::string forged = "x stallscope/1 FAST conf=1.00 top=none file=/tmp/evil/summary.json";
    const std::string real =
        "stallscope/1 FAIL_RISK conf=0.93 top=gpu_xid:79 gpus=8 dur=60 file=/w/s/summary.json";
    auto seg = parse_comment_segment(forged + "; " + real);
    REQUIRE(seg);
    CHECK(seg->label == "FAIL_RISK");
    CHECK(seg->file == "/w/s/summary.json");
    // Inside a foreign segment, with no real one: nothing.
    CHECK_FALSE(parse_comment_segment("JS1:abc stallscope/1 FAST conf=1.00 file=/tmp/evil"));
    CHECK_FALSE(parse_comment_segment("JS1:abc;stallscope/1 FAST conf=1.00"));
    CHECK_FALSE(parse_comment_segment("xstallscope/1 FAST conf=1.00"));
    // At the start, after "; ", and after a foreign segment that itself mentions us.
    CHECK(parse_comment_segment("stallscope/1 SLOW conf=0.5")->label == "SLOW");
    CHECK(parse_comment_segment("JS1:a; stallscope/1 SLOW conf=0.5")->label == "SLOW");
    CHECK(parse_comment_segment("note stallscope/1 FAST; stallscope/1 SLOW conf=0.5")->label == "SLOW");
}

TEST_CASE("a hung job's segment names the culprit last, bounded, and drops file= before hang= (issue 41)") {
    JobCommentFacts f;
    f.label = kLabelFailRisk;
    f.confidence = 0.9;
    f.top = "gpu_busy_wait_hang:n1:GPU-0";
    f.nodes = 2;
    f.gpus_measured = 16;
    f.node = "n1";
    f.file = "/p/summary.json";
    f.hang_kind = "culprit";
    f.hang_rank = 2;
    f.hang_host = "n2";
    f.hang_gpu = 0;
    const auto s = compose_job_comment_segment(f);
    CHECK(s ==
          "stallscope/1 FAIL_RISK conf=0.90 top=gpu_busy_wait_hang:n1:GPU-0 nodes=2 gpus=16 dur=0 node=n1 "
          "file=/p/summary.json hang=culprit:rank2@n2/gpu0");
    auto seg = parse_comment_segment(s + "; JS1:x");
    REQUIRE(seg);
    CHECK(seg->hang == "culprit:rank2@n2/gpu0");
    CHECK(seg->file == "/p/summary.json");
    // An older reader stops at the first key it does not know: everything else comes before hang=.
    CHECK(s.find(" hang=") > s.find(" file="));

    // No rank named: the kind alone; no evidence at all: no key.
    f.hang_kind = "all_waiting", f.hang_rank = -1, f.hang_host.clear(), f.hang_gpu = -1;
    CHECK(compose_job_comment_segment(f).ends_with(" file=/p/summary.json hang=all_waiting"));
    f.hang_kind.clear();
    CHECK(compose_job_comment_segment(f).find("hang=") == std::string::npos);

    // A host name of 300 odd bytes is cut before its encoding; a path that leaves no room drops file=.
    f.hang_kind = "suspect", f.hang_rank = 7, f.hang_host = std::string(300, ' '), f.hang_gpu = 3;
    f.file = "/" + std::string(1000, 'a');
    const auto long_one = compose_job_comment_segment(f);
    CHECK(long_one.size() <= kCommentMaxLength);
    CHECK(long_one.find(" file=") == std::string::npos);
    std::string spaces;
    for (int i = 0; i < 48; ++i) spaces += "%20";
    CHECK(long_one.ends_with(" hang=suspect:rank7@" + spaces + "/gpu3"));
    CHECK(parse_comment_segment(long_one)->hang == "suspect:rank7@" + std::string(48, ' ') + "/gpu3");
}
