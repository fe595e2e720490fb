#include "libstallscope/timeline/sample_line.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "libstallscope/timeline/timeline.h"
#include "tests/unit/snapshot_fixture.h"

using namespace stallscope;
using stallscope::test::full_snapshot;

namespace {

Profile slow_profile() {
    Profile p;
    p.label = kLabelSlow;
    p.confidence = 0.8123456;
    p.bottleneck_hint = "network";
    Reason r;
    r.code = "fabric_congestion";
    r.subject = "mlx5_0/1";
    r.message = "mlx5_0/1: 12.5 % of time in congestion";
    p.reasons.push_back(r);
    r.code = "delta_rules_pending";
    r.subject = "";
    p.reasons.push_back(r);
    return p;
}

std::string sample_text(const Snapshot& s, const Profile& p = {}) {
    std::string text;
    append_sample_line(text, s, p);
    return text;
}

// What the line must start with: "type" and then exactly the bytes to_json(snapshot).dump() gives.
std::string expected_prefix(const Snapshot& s) {
    const std::string snapshot = to_json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
    return R"({"type":"sample",)" + snapshot.substr(1, snapshot.size() - 2) + R"(,"summary":)";
}

// Strings and numbers the fast writer must leave to nlohmann's escaping or print as nlohmann does.
Snapshot awkward_snapshot() {
    Snapshot s = full_snapshot();
    s.host = "n\"ode\\1\t\x01";
    s.context.job_name = "tr\xc3\xa4ning \xe2\x80\x94 run";  // UTF-8 kept as is
    s.context.user = "bad\xff\xfe utf8";                     // invalid UTF-8: replaced, as nlohmann does
    s.host_stats.load1 = std::numeric_limits<double>::quiet_NaN();
    s.host_stats.load5 = -0.0;
    s.host_stats.load15 = 1e300;
    s.host_stats.psi.cpu_some_avg10 = 5e-324;
    s.host_stats.psi.io_some_avg10 = 1e15;
    s.host_stats.psi.io_full_avg10 = 1e16;
    s.host_stats.psi.memory_some_avg10 = 0.0001;
    s.host_stats.psi.memory_full_avg10 = 0.00001;
    s.interfaces[0].pause["weird \"name\""] = 0;
    s.gpus[0].index = -1;
    s.gpus[0].minor_number.reset();
    s.gpus[0].xid = {-5, 79, 2147483647};
    s.collector_failures["x\ny"] = "tab\there";
    s.warnings.push_back("\x7f del");
    return s;
}

}  // namespace

TEST_CASE("a sample line is \"type\", the snapshot exactly as to_json dumps it, then the summary") {
    for (const Snapshot& s : {full_snapshot(), awkward_snapshot(), Snapshot{}}) {
        const std::string text = sample_text(s, slow_profile());
        const std::string prefix = expected_prefix(s);
        CHECK(text.compare(0, prefix.size(), prefix) == 0);
        const Json line = Json::parse(text);
        CHECK(line["type"] == "sample");
        std::vector<std::string> problems;
        const Snapshot back = snapshot_from_json(line, problems);
        CHECK(problems.empty());
        CHECK(to_json(back).dump(-1, ' ', false, Json::error_handler_t::replace) ==
              to_json(s).dump(-1, ' ', false, Json::error_handler_t::replace));
    }
}

TEST_CASE("the per-sample summary names label, confidence, hint and reason codes, not the full profile") {
    const Json line = Json::parse(sample_text(full_snapshot(), slow_profile()));
    CHECK_FALSE(line.contains("profile"));
    REQUIRE(line.contains("summary"));
    const Json& summary = line["summary"];
    CHECK(summary["label"] == "SLOW");
    CHECK(summary["confidence"] == 0.8123);
    CHECK(summary["bottleneck_hint"] == "network");
    CHECK(summary["reasons"] == Json::array({"fabric_congestion:mlx5_0/1", "delta_rules_pending"}));
    CHECK_FALSE(summary.contains("unknown_reason"));
    CHECK(line.back() == summary);  // last member, after the snapshot

    Profile unknown;
    unknown.unknown_reason = "no_counters: the sample holds no GPU, RDMA, interface or host data";
    const Json u = Json::parse(sample_text(Snapshot{}, unknown))["summary"];
    CHECK(u["label"] == "UNKNOWN");
    CHECK(u["confidence"] == 0);
    CHECK(u["reasons"].empty());
    CHECK(u["unknown_reason"] == unknown.unknown_reason);
}

TEST_CASE("timeline_sample_line gives the same line as a Json") {
    const Snapshot s = full_snapshot();
    CHECK(timeline_sample_line(s, slow_profile()).dump() == sample_text(s, slow_profile()));
}
