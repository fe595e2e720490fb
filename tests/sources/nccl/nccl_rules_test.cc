// nccl rules on parsed fixtures and small hand-built NcclState values: each test is one scenario.
#include <doctest/doctest.h>

#include <set>

#include "libstallscope/rules/nccl_rules.h"
#include "libstallscope/rules/profiler.h"
#include "libstallscope/sources/nccl/log_scan.h"
#include "libstallscope/sources/nccl/ras_parse.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

Snapshot with_report(double time, const std::string& fixture) {
    Snapshot s;
    s.time = time;
    auto r = nccl::parse_ras_report(nccl_fixture(fixture));
    r.time = time;
    s.nccl.ras.push_back(r);
    return s;
}

template <typename Rule>
Findings run(Rule&& rule, const Snapshot& s, const Thresholds& t = {}) {
    Findings out;
    rule(RuleInput{s, nullptr, nullptr, t}, out);
    return out;
}

std::vector<std::string> codes(const Findings& f) {
    std::vector<std::string> c;
    for (const auto& x : f) c.push_back(x.reason.code);
    return c;
}

}  // namespace

TEST_CASE("a DEAD process is FAIL_RISK naming the process, once") {
    const auto f = run(nccl_ras_failure_rule, with_report(100, "ras/text_dead_2.30.7.txt"));
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_rank_dead"});
    CHECK(f[0].reason.label == kLabelFailRisk);
    CHECK(f[0].reason.category == "nccl");
    CHECK(f[0].reason.subject == "process 3487984 on 10.0.0.2 (GPU 5)");
}

TEST_CASE("an async error is nccl_async_error; a healthy report is nothing") {
    const auto err = run(nccl_ras_failure_rule, with_report(100, "ras/text_async_error_2.30.7.txt"));
    REQUIRE(codes(err) == std::vector<std::string>{"nccl_async_error"});
    CHECK(err[0].reason.message.find("Remote process error") != std::string::npos);
    CHECK(err[0].reason.message.find("aborting") != std::string::npos);
    CHECK(run(nccl_ras_failure_rule, with_report(100, "ras/text_healthy_2.30.7.txt")).empty());
}

TEST_CASE("ranks unanswered in one poll are nothing yet; in two consecutive polls nccl_rank_missing") {
    // One poll is a rank busy in a long kernel (the README's policy): neither rule reports it.
    CHECK(run(nccl_ras_failure_rule, with_report(100, "ras/text_incomplete_2.30.7.txt")).empty());
    NcclMissingRankRule rule;
    auto eval = [&](double t) {
        return run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); },
                   with_report(t, "ras/text_incomplete_2.30.7.txt"));
    };
    CHECK(eval(100).empty());
    const auto f = eval(160);
    CHECK(codes(f) == std::vector<std::string>{"nccl_rank_missing", "nccl_rank_missing"});
    REQUIRE(!f.empty());
    CHECK(f[0].reason.message.find("rank(s) 13") != std::string::npos);
    CHECK(f[0].since == 100);
}

TEST_CASE("a count mismatch that persists without progress is a hang naming the lagging rank") {
    NcclHangRule rule;
    auto eval = [&](double t) {
        return run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); },
                   with_report(t, "ras/text_mismatch_2.30.7.txt"));
    };
    CHECK(eval(1000).empty());  // one poll: busy jobs show transient mismatches
    CHECK(eval(1060).empty());  // same laggard, 60 s < nccl_hang_min_seconds
    const auto f = eval(1120);  // 120 s, three polls
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_collective_hang"});
    CHECK(f[0].reason.label == kLabelFailRisk);
    CHECK(f[0].since == 1000);
    CHECK(std::get<std::string>(f[0].reason.evidence.at("lagging_ranks")) == "9");
    CHECK(f[0].reason.message.find("stuck at AllReduce launch 6649 while others reached 6650") !=
          std::string::npos);
}

TEST_CASE("a mismatch that clears or moves on is not a hang") {
    NcclHangRule rule;
    auto eval = [&](double t, const char* fx) {
        return run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); }, with_report(t, fx));
    };
    eval(1000, "ras/text_mismatch_2.30.7.txt");
    eval(1060, "ras/text_healthy_2.30.7.txt");  // cleared
    CHECK(eval(1120, "ras/text_mismatch_2.30.7.txt").empty());
    CHECK(eval(1180, "ras/json_dead_async_error_2.30.7.json").empty());  // different comm and laggard
}

TEST_CASE("an Inspector straggler is SLOW only past the instance and share thresholds") {
    Snapshot s;
    s.nccl.inspector.stragglers.push_back(
        NcclStraggler{"cf264af53edbe986", "AllReduce", 2, "node002", 10, 9, 480});
    NcclInspectorRule rule;
    auto f = run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); }, s);
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_straggler_rank"});
    CHECK(f[0].reason.label == kLabelSlow);
    CHECK(f[0].reason.subject == "rank 2 on node002");
    s.nccl.inspector.stragglers[0].instances = 5;  // too few instances
    CHECK(run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); }, s).empty());
}

TEST_CASE("a bus bandwidth drop against the step's best median is SLOW") {
    NcclInspectorRule rule;
    auto at_bw = [&](double bw) {
        Snapshot s;
        for (int rank = 0; rank < 4; ++rank)
            s.nccl.inspector.collectives.push_back(
                NcclCollectiveStats{"c", "AllReduce", 268435456, rank, 4, "n", 10, bw, 1400});
        return run([&](const RuleInput& in, auto& out) { rule.evaluate(in, out); }, s);
    };
    CHECK(at_bw(360).empty());
    CHECK(at_bw(300).empty());  // 17 % below: within the band
    const auto f = at_bw(200);  // 44 % below
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_busbw_drop"});
    CHECK(std::get<double>(f[0].reason.evidence.at("best_busbw_gbs")) == 360);
}

TEST_CASE("IB completion errors and watchdog timeouts from logs are FAIL_RISK, grouped per subject") {
    Snapshot s;
    const std::string text =
        nccl_fixture("logs/nccl.node002.3490012.log") + nccl_fixture("logs/torch_rank3.log");
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        NcclLogEvent e;
        if (nccl::classify_log_line(text.substr(pos, nl - pos), e)) s.nccl.log_events.push_back(e);
        pos = nl == std::string::npos ? text.size() : nl + 1;
    }
    const auto f = run(nccl_log_rule, s);
    std::set<std::string> c;
    for (const auto& x : f) {
        c.insert(x.reason.code);
        CHECK(x.reason.label == kLabelFailRisk);
    }
    CHECK(c == std::set<std::string>{"nccl_ib_completion_error", "nccl_ib_async_fatal",
                                     "nccl_watchdog_timeout", "nccl_watchdog_stuck", "nccl_error"});
}

TEST_CASE("a failed nccl-tests run is FAIL_RISK; a passing one is info; not found says nothing") {
    Snapshot s;
    s.nccl.nccl_test = NcclTestResult{};
    s.nccl.nccl_test->outcome = "wrong_data";
    s.nccl.nccl_test->exit_code = 7;
    s.nccl.nccl_test->wrong = 3;
    auto f = run(nccl_test_rule, s);
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_test_failed"});
    CHECK(f[0].reason.label == kLabelFailRisk);
    s.nccl.nccl_test->outcome = "ok";
    s.nccl.nccl_test->peak_busbw_gbs = 372;
    f = run(nccl_test_rule, s);
    REQUIRE(codes(f) == std::vector<std::string>{"nccl_test_result"});
    CHECK(f[0].reason.label == kLabelFast);
    s.nccl.nccl_test->outcome = "not_found";
    CHECK(run(nccl_test_rule, s).empty());
}

TEST_CASE("the profiler runs the nccl rules: a DEAD rank makes the sample FAIL_RISK") {
    Profiler p;
    Snapshot s = with_report(100, "ras/text_dead_2.30.7.txt");
    s.host_stats.mem_total_bytes = 1;
    const Profile prof = p.observe(s);
    CHECK(prof.label == kLabelFailRisk);
    REQUIRE(!prof.reasons.empty());
    CHECK(prof.reasons[0].code == "nccl_rank_dead");
}
