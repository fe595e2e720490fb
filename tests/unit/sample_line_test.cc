#include "libstallscope/timeline/sample_line.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
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

// ---- reading ----

namespace {

std::string dumped(const Snapshot& s) {
    return to_json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// read_sample_line either declines the line or reads exactly what the nlohmann path reads from it, with
// no problem that path would report. Returns whether it took the line.
bool reads_like_nlohmann(const std::string& line) {
    Snapshot fast;
    fast.host = "left over";  // the reader must not depend on what `out` held
    const bool taken = read_sample_line(line, fast);
    if (!taken) return false;
    const Json j = Json::parse(line, nullptr, false);
    REQUIRE_MESSAGE(j.is_object(), line);
    const auto type = j.find("type");
    const auto schema = j.find("schema");
    const bool is_sample =
        (type != j.end() && *type == "sample") ||
        ((type == j.end() || !type->is_string()) && schema != j.end() && *schema == kSnapshotSchema);
    CHECK_MESSAGE(is_sample, line);
    std::vector<std::string> problems;
    const Snapshot slow = snapshot_from_json(j, problems);
    CHECK_MESSAGE(problems.empty(), line);
    CHECK_MESSAGE(dumped(fast) == dumped(slow), line);
    return true;
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// A sample line as timelines before the compact summary had it: the full per-sample profile.
std::string old_format_line(const Snapshot& s, const Profile& p) {
    Json line{{"type", "sample"}};
    const Json fields = to_json(s);
    for (const auto& [key, value] : fields.items()) line[key] = value;
    line["profile"] = to_json(p);
    return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Profile profile_with_evidence() {
    Profile p = slow_profile();
    p.reasons[0].evidence = {{"congestion_share", 0.125}, {"port", std::string("mlx5_0/1")}};
    p.reasons[0].first_seen = 1795160400.5;
    p.reasons[0].message = "mlx5_0/1 \xe2\x80\x94 12.5 % \"congested\"";
    return p;
}

}  // namespace

TEST_CASE(
    "the helper's sample lines, old lines with the full profile and --json lines read without nlohmann") {
    for (const Snapshot& s : {full_snapshot(), awkward_snapshot(), Snapshot{}}) {
        CHECK(reads_like_nlohmann(sample_text(s, slow_profile())));
        CHECK(reads_like_nlohmann(old_format_line(s, profile_with_evidence())));
        Json cli = to_json(s);  // periodic --json: no "type", rates and profile after the snapshot
        cli["rates"] = Json{{"interval_seconds", 1}, {"host", Json::object()}};
        cli["profile"] = to_json(profile_with_evidence());
        CHECK(reads_like_nlohmann(cli.dump(-1, ' ', false, Json::error_handler_t::replace)));
    }
}

TEST_CASE("every sample line of the scenario and fixture timelines is read as nlohmann reads it") {
    std::vector<std::string> files;
    for (const char* name : {"ack_timeouts",
                             "busy_wait_hang",
                             "cnp_storm",
                             "collector_timeout",
                             "ecc_row_remap_pending",
                             "healthy_baseline",
                             "healthy_long",
                             "idle_gpus_2_of_8",
                             "lifetime_counters_high",
                             "link_flap",
                             "memory_pressure",
                             "nccl_hang_with_fabric",
                             "oom_kill",
                             "pfc_pause_storm",
                             "port_down",
                             "power_brake",
                             "rdma_loss",
                             "stale_counters",
                             "straggler_gpu",
                             "tcp_only_eth0",
                             "thermal_throttle",
                             "xid_13",
                             "xid_79"})
        files.push_back(std::string(STALLSCOPE_TESTS_DIR) + "/scenarios/" + name + ".jsonl");
    for (int node = 1; node <= 4; ++node)
        files.push_back(std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242/timeline.0.gpu-node-0" +
                        std::to_string(node) + ".jsonl");
    int taken = 0, samples = 0;
    for (const auto& path : files) {
        for (const auto& line : lines_of(path)) {
            const Json j = Json::parse(line, nullptr, false);
            const bool sample =
                j.is_object() && (j.value("type", "") == "sample" ||
                                  (!j.contains("type") && j.value("schema", "") == kSnapshotSchema));
            samples += sample;
            const bool fast = reads_like_nlohmann(line);
            taken += fast;
            if (!sample) CHECK_MESSAGE(!fast, (path + ": " + line.substr(0, 80)));
        }
    }
    CHECK(samples > 100);
    CHECK(taken == samples);  // no sample line in them needs the slow path
}

TEST_CASE("lines the reader must decline or read exactly as snapshot_from_json does") {
    const std::string base = R"({"type":"sample","unix_time":100.5,"host":"n1")";
    const std::vector<std::pair<std::string, bool>> cases = {
        // (line, whether the fast reader must take it)
        {base + "}", true},
        {base + R"(,"summary":{"label":"FAST","reasons":[]}})", true},
        {base + R"(,"host":"n2","host":null})", true},  // last duplicate wins, null is absent
        {base + R"(,"host":42})", true},                // job_id-style integers read as strings
        {base + R"(,"host":-7})", true},
        {base + R"(,"host":1.5})", false},  // wrong type: a problem to word
        {base + R"(,"host":true})", false},
        {base + R"(,"host":"\u00e4\ud83d\ude00\n\"\\\/\b\f\r\t"})", true},
        {base + R"(,"host":"\ud83d"})", false},  // lone surrogate: invalid JSON
        {base + R"(,"host":"\udc00x"})", false},
        {base + R"(,"host":"\u00zz"})", false},
        {base + ",\"host\":\"raw\xc3\xa4\xf0\x9f\x98\x80\"}", true},
        {base + ",\"host\":\"bad\xc3\"}", false},          // truncated UTF-8
        {base + ",\"host\":\"bad\xed\xa0\x80\"}", false},  // UTF-8 surrogate
        {base + ",\"host\":\"ctl\x01\"}", false},          // raw control character
        {base + "} x", false},                             // trailing garbage
        {base + "}  \r", true},
        {base + R"(,"host_stats":{"oom_kills":-0,"mem_total_bytes":18446744073709551615}})", true},
        {base + R"(,"host_stats":{"oom_kills":18446744073709551616}})", false},  // a float to nlohmann
        {base + R"(,"host_stats":{"oom_kills":-1}})", false},
        {base + R"(,"host_stats":{"oom_kills":1.0}})", false},
        {base + R"(,"host_stats":{"oom_kills":"3"}})", false},
        {base + R"(,"host_stats":{"load1":-0,"load5":1e2,"load15":-2.5E-3}})", true},
        {base + R"(,"host_stats":{"load1":1e400}})", false},
        {base + R"(,"host_stats":{"load1":01}})", false},
        {base + R"(,"host_stats":{"load1":.5}})", false},
        {base + R"(,"host_stats":{"load1":1.}})", false},
        {base + R"(,"host_stats":{"load1":18446744073709551616}})", true},
        {base + R"(,"host_stats":{"load1":-9223372036854775809}})", true},
        {base + R"(,"host_stats":[1,2]})", true},  // not an object: ignored
        {base + R"(,"host_stats":{"psi":{"io_full_avg10":1},"psi":null}})", true},
        {base + R"(,"context":{"job_id":"1"},"context":{"user":"u"}})", true},
        {base + R"(,"context":{"scheduler":"","gpus":["0",1,null,2.5,{"a":[]},"x"]}})", true},
        {base + R"(,"context":{"gpus":[9223372036854775808]}})", false},
        {base + R"(,"context":{"gpus":"0,1"}})", false},
        {base + R"(,"context":"slurm"})", true},
        {base + R"(,"interfaces":[{"name":"eth0","pause":{"b":1,"a":null,"b":2}},{}]})", true},
        {base + R"(,"interfaces":[{"name":"eth0","pause":{"a\u0000b":1}}]})", false},
        {base + R"(,"interfaces":[5]})", false},
        {base + R"(,"interfaces":{}})", false},
        {base + R"(,"interfaces":null})", true},
        {base + R"(,"rdma":[{"device":"mlx5_0","port":1,"counters":{},"hw_counters":{"x":0}}]})", true},
        {base + R"(,"rdma":[{"port":9223372036854775808}]})", false},
        {base + R"(,"rdma":[{"port":-4294967297}]})", true},
        {base +
             R"(,"gpus":[{"index":null,"minor_number":3,"xid":[79,"x",2.5,-3,99999999999999999999,4294967297]}]})",
         true},
        {base + R"(,"gpus":[{"xid":"79","throttle_reasons":["a",5]}]})", true},
        {base + R"(,"gpus":[{"utilization_pct":"97%"}]})", false},
        {base + R"(,"xid_events":[{"code":79,"gpu_index":0,"message":"fell off"}]})", true},
        {base + R"(,"collector_failures":{"nvml":"timeout","nvml":"again"}})", true},
        {base + R"(,"collector_failures":{"nvml":5}})", false},
        {base + R"(,"collector_failures":[]})", true},
        {base + R"(,"nccl":{"ras":[]}})", true},
        {base + R"(,"nccl":"x"})", true},
        {base + R"(,"nccl":{"ras":5}})", false},
        {base + R"(,"warnings":["a","b"],"warnings":null})", true},
        {base + R"(,"unknown":{"deep":[[[[{"x":[true,false,null,-1.5e3,"s"]}]]]],"e":{},"f":[]}})", true},
        {base + R"(,"unknown":8e99345920})", false},  // not finite: nlohmann rejects the line (fuzz)
        {base + R"(,"unknown":)" + std::string(400, '9') + "}", false},
        {base + R"(,"unknown":123456789012345678901234567890})", true},
        {base + R"(,"context":{"gpus":[1e400]}})", false},
        {base + R"(,"context":{"gpus":[123456789012345678901234567890]}})", true},  // a float: dropped
        {base + R"(,"gpus":[{"xid":[1e999]}]})", false},
        {base + R"(,"unknown":[1,}})", false},
        {base + R"(,"unknown":{"a" 1}})", false},
        {base + R"(,"unknown":tru})", false},
        {base + R"(,"unknown":)" + std::string(200, '[') + std::string(200, ']') + "}", false},
        {R"({"unix_time":1,"host":"n1","type":"sample"})", true},
        {R"({"schema":"stallscope.snapshot/1","time":"2026-11-22T05:00:00Z"})", true},
        {R"({"schema":"stallscope.snapshot/1","time":1795323600.25})", true},
        {R"({"schema":"stallscope.snapshot/1","time":"yesterday"})", false},  // a problem to word
        {R"({"schema":"stallscope.snapshot/1","time":[1]})", true},
        {R"({"schema":"stallscope.snapshot/1","unix_time":"1"})", false},
        {R"({"schema":"stallscope.snapshot/1","unix_time":null,"time":5})", true},
        {R"({"type":"header","schema":"stallscope.snapshot/1"})", false},  // other line types: Json path
        {R"({"type":"event","kind":"xid"})", false},
        {R"({"type":"verdict","label":"FAST"})", false},
        {R"({"type":5,"schema":"stallscope.snapshot/1"})", false},
        {R"({"host":"n1"})", false},
        {R"({})", false},
        {R"([1])", false},
        {R"({"type":"sample","host":"n1")", false},  // torn
        {"", false},
    };
    for (const auto& c : cases) {
        const std::string& line = c.first;  // (not a structured binding: CAPTURE's lambda needs a variable)
        CAPTURE(line);
        CHECK(reads_like_nlohmann(line) == c.second);
    }
}

TEST_CASE("random damage to a sample line: the reader declines it or reads it exactly as nlohmann does") {
    const std::string clean = sample_text(full_snapshot(), slow_profile());
    const std::string alphabet = "{}[]\",:0-9.eE+-truefalsnl\\u00ff \x01\xc3\xa4";
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    auto next = [&](std::size_t n) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return static_cast<std::size_t>(state % n);
    };
    int taken = 0;
    for (int round = 0; round < 1500; ++round) {
        std::string line = clean;
        for (int edits = 1 + static_cast<int>(next(3)); edits > 0; --edits) {
            const std::size_t at = next(line.size());
            switch (next(3)) {
                case 0:
                    line.erase(at, 1 + next(4));
                    break;
                case 1:
                    line.insert(at, 1, alphabet[next(alphabet.size())]);
                    break;
                default:
                    line[at] = alphabet[next(alphabet.size())];
                    break;
            }
        }
        taken += reads_like_nlohmann(line);
    }
    CHECK(taken > 0);  // some damage (inside strings, numbers) still reads; all of it like nlohmann
}
