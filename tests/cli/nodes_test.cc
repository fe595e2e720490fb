// `stallscope nodes`: Slurm node-list expansion and the per-node ranking, on sacct text as sacct prints it.
#include <doctest/doctest.h>

#include "helper/node_ranking.h"
#include "helper/slurm_node_list.h"

using namespace stallscope::cli;

namespace {

std::vector<std::string> expand(std::string_view list) {
    std::vector<std::string> out;
    std::string error;
    REQUIRE_MESSAGE(expand_node_list(list, out, error), error);
    return out;
}

std::string expand_error(std::string_view list, std::size_t max = 1u << 20) {
    std::vector<std::string> out{"kept"};
    std::string error;
    CHECK_FALSE(expand_node_list(list, out, error, max));
    CHECK(out == std::vector<std::string>{"kept"});  // nothing half-appended
    return error;
}

// One sacct row in kNodesSacctFormat order.
std::string row(const std::string& id, const std::string& nodes, const std::string& comment) {
    const std::string d = "#~d~#";
    return id + d + "COMPLETED" + d + nodes + d + comment + "\n";
}

NodeRanking rank(const std::string& sacct, NodeRankingOptions o = {}) {
    NodeRanker r(o);
    read_sacct_nodes_output(sacct, "#~d~#", r);
    return r.finish();
}

const NodeTally* find(const NodeRanking& r, const std::string& name) {
    for (const auto& t : r.nodes)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace

TEST_CASE("node lists expand the way Slurm writes them") {
    CHECK(expand("gpu[001-003,100]") == std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu100"});
    CHECK(expand("n1,login[8-10]") == std::vector<std::string>{"n1", "login8", "login9", "login10"});
    CHECK(expand("node[08-10]") == std::vector<std::string>{"node08", "node09", "node10"});
    // several bracket groups: every combination, in Slurm's order; a suffix after the bracket
    CHECK(expand("r[1-2]n[01-02]-ib") ==
          std::vector<std::string>{"r1n01-ib", "r1n02-ib", "r2n01-ib", "r2n02-ib"});
    CHECK(expand("a[7],b[2-3],c") == std::vector<std::string>{"a7", "b2", "b3", "c"});
    CHECK(expand("gpu[001-064,100]").size() == 65);
    CHECK(expand("None assigned").empty());
    CHECK(expand("").empty());
}

TEST_CASE("a node list that is not Slurm's syntax is an error, not a guess") {
    CHECK(expand_error("gpu[001-003").find("unbalanced '['") != std::string::npos);
    CHECK(expand_error("gpu]1").find("unbalanced ']'") != std::string::npos);
    CHECK(expand_error("gpu[5-3]").find("N <= M") != std::string::npos);
    CHECK(expand_error("gpu[a-b]").find("not N or N-M") != std::string::npos);
    CHECK(expand_error("gpu[1-2]x,y z").find("space") != std::string::npos);
    CHECK(expand_error("n[0-99999999]").find("more than") != std::string::npos);
    CHECK(expand_error("a[1-100]b[1-100]", 1000).find("more than 1000") != std::string::npos);
}

TEST_CASE("the node that keeps failing its job-mates ranks first and becomes a drain candidate") {
    std::string sacct;
    // gpu003 is the root cause of 3 of its 4 jobs; gpu001/gpu002 ran the same jobs and were fine.
    sacct += row("11", "gpu[001-003]",
                 "stallscope/1 FAIL_RISK conf=0.90 top=gpu_xid_critical:gpu003:GPU-3 nodes=3 "
                 "gpus=24 dur=60 node=gpu003 file=/p/summary.json");
    sacct += row("12", "gpu[002-003]",
                 "stallscope/1 SLOW conf=0.80 top=gpu_thermal_throttle:gpu003:GPU-1 nodes=2 "
                 "gpus=16 dur=60 node=gpu003");
    sacct += row("13", "gpu[001,003]",
                 "stallscope/1 SLOW conf=0.70 top=node_straggler:gpu003 nodes=2 "
                 "stragglers=gpu003 gpus=16 dur=60 node=gpu003");
    sacct += row("14", "gpu[001-003]", "stallscope/1 FAST conf=0.95 nodes=3 gpus=24 dur=60 node=gpu003");
    sacct +=
        row("15", "gpu[001-002]", "JS1:abc; stallscope/1 FAST conf=0.95 nodes=2 gpus=16 dur=60 node=gpu001");
    sacct += row("16", "gpu001", "");  // not recorded by stallscope: not counted
    const NodeRanking r = rank(sacct);
    CHECK(r.rows == 6);
    CHECK(r.with_verdict == 5);
    const NodeTally* bad = find(r, "gpu003");
    REQUIRE(bad);
    CHECK(bad->jobs == 4);
    CHECK(bad->named == 3);
    CHECK(bad->root_cause == 3);  // the FAST job 14 names a worst node, not a root cause
    CHECK(bad->straggler == 1);
    CHECK(bad->reasons.at("gpu_xid_critical") == 1);
    CHECK(bad->reasons.at("node_straggler") == 2);  // root cause node_straggler + stragglers=
    CHECK(bad->job_ids == std::vector<std::string>{"11", "12", "13"});
    REQUIRE(r.ranked.size() == 1);
    CHECK(r.nodes[r.ranked[0]].name == "gpu003");
    REQUIRE(r.drain.size() == 1);
    CHECK(r.nodes[r.drain[0]].name == "gpu003");
    CHECK(find(r, "gpu001")->jobs == 4);
    CHECK(find(r, "gpu001")->named == 0);
    CHECK(r.node_runs == 12);
    CHECK(r.named_runs == 3);
}

TEST_CASE("a node below --min-jobs is listed apart, a share below --drain-share is no candidate") {
    std::string sacct;
    sacct += row("1", "n[1-2]",
                 "stallscope/1 SLOW conf=0.8 top=fabric_congestion:n1:mlx5_0/1 nodes=2 gpus=2 dur=9 node=n1");
    sacct += row("2", "n[1-2]", "stallscope/1 FAST conf=0.9 nodes=2 gpus=2 dur=9 node=n1");
    sacct += row("3", "n[1-2]", "stallscope/1 FAST conf=0.9 nodes=2 gpus=2 dur=9 node=n1");
    sacct += row("4", "n[2-3]",
                 "stallscope/1 FAIL_RISK conf=0.9 top=rdma_port_down:n3:mlx5_0/1 nodes=2 missing=n3 "
                 "gpus=2 dur=9 node=n3");
    const NodeRanking r = rank(sacct);
    REQUIRE(r.ranked.size() == 1);
    CHECK(r.nodes[r.ranked[0]].name == "n1");  // 1/3: ranked, below the 0.5 drain share
    CHECK(r.drain.empty());
    REQUIRE(r.too_few_jobs.size() == 1);
    const NodeTally& n3 = r.nodes[r.too_few_jobs[0]];
    CHECK(n3.name == "n3");
    CHECK(n3.named == 1);  // root cause and missing in one job: named once
    CHECK(n3.missing == 1);
    CHECK(n3.reasons.at("no_verdict") == 1);
    NodeRankingOptions loose;
    loose.min_jobs = 1;
    loose.drain_share = 0.3;
    loose.drain_min_named = 1;
    const NodeRanking l = rank(sacct, loose);
    CHECK(l.ranked.size() == 2);
    CHECK(l.nodes[l.ranked[0]].name == "n3");  // 1/1 before 1/3
    CHECK(l.drain.size() == 2);
}

TEST_CASE("names a comment gives outside the job's node list are counted, never credited") {
    // A verdict file is written by the job user: its host names may be anything, even shell syntax.
    const NodeRanking r = rank(row("7", "gpu[1-2]",
                                   "stallscope/1 SLOW conf=0.8 top=x:gpu9 nodes=2 "
                                   "stragglers=gpu1,%3Brm%20-rf,+4 gpus=2 dur=9 node=gpu9"));
    CHECK(r.named_outside_list == 2);  // gpu9 (root cause) and "; rm -rf"
    CHECK(r.unnamed_in_lists == 4);    // "+4": hosts the comment had no room for
    CHECK(find(r, "gpu9") == nullptr);
    CHECK(find(r, "gpu1")->straggler == 1);
}

TEST_CASE("sacct output: continuation lines, malformed rows, bad node lists") {
    std::string sacct =
        row("1", "n[1-3]", "stallscope/1 SLOW conf=0.8 top=a:n2 nodes=3 gpus=3 dur=9 node=n2");
    sacct.pop_back();
    sacct += " JS1:first-line\nsecond line of another tool\n";  // AdminComment with a newline
    sacct += "2#~d~#COMPLETED#~d~#n1\n";                        // 3 fields: malformed
    sacct += row("3", "n[1-", "stallscope/1 SLOW conf=0.8 top=a:n1 nodes=1 gpus=1 dur=9 node=n1");
    sacct += row("4", "n[1-3]", "stallscope/1 SLOW conf=0.8 top=%22%27evil:n2 nodes=3 gpus=3 dur=9 node=n2");
    const NodeRanking r = rank(sacct);
    CHECK(r.rows == 3);
    CHECK(r.malformed_rows == 1);
    CHECK(r.bad_node_lists == 1);
    CHECK(r.first_bad_node_list == "n[1-");
    const NodeTally* n2 = find(r, "n2");
    REQUIRE(n2);
    CHECK(n2->root_cause == 2);
    CHECK(n2->reasons.at("a") == 1);
    CHECK(n2->reasons.at("other") == 1);  // a reason code with quotes never reaches a printed Reason=
    CHECK(plain_reason_code("gpu_xid_critical:n1:GPU-0") == "gpu_xid_critical");
    CHECK(plain_reason_code("x'; reboot") == "other");
}
