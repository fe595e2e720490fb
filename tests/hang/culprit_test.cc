// name_culprit, table-driven: which rank the job waits for, from which agreeing sources.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "libstallscope/hang/culprit.h"

using namespace stallscope;

namespace {

FlightRecorderDump dump_of(const std::string& scenario, int rank) {
    std::ifstream in(std::string(STALLSCOPE_FIXTURES_DIR) + "/hang/fr/" + scenario + "/nccl_trace_rank_" +
                         std::to_string(rank),
                     std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    FlightRecorderDump d;
    std::vector<std::string> warnings;
    std::string error;
    REQUIRE_MESSAGE(read_flight_recorder_dump(s.str(), d, warnings, error), error);
    d.rank = rank;
    return d;
}

// Four ranks, two per node, GPU = local rank.
HangEvidence four_ranks() {
    HangEvidence e;
    for (int r = 0; r < 4; ++r) {
        RankEvidence x;
        x.rank = r;
        x.host = r < 2 ? "node-a" : "node-b";
        x.gpu = r % 2;
        x.pid = 1000 + r;
        e.ranks.push_back(x);
    }
    return e;
}

void with_dumps(HangEvidence& e, const std::string& scenario) {
    for (auto& r : e.ranks) r.flight_recorder = dump_of(scenario, r.rank);
}

RankGpuState spinning_gpu() {
    return {99.0, 2.0, 80.0, 700.0, false};
}
RankGpuState idle_gpu() {
    return {0.0, 0.0, 70.0, 700.0, false};
}

RankMainThread thread_doing(ThreadActivity a, char state, std::string wchan = "") {
    RankMainThread t;
    t.activity = a;
    t.state = state;
    t.wchan = std::move(wchan);
    t.cpu_share = a == ThreadActivity::spinning ? 1.0 : 0.0;
    return t;
}

struct Row {
    const char* scenario;
    std::function<HangEvidence()> build;
    HangFindingKind kind;
    int rank;
    std::vector<std::string> sources;
    std::string line_has;
};

}  // namespace

TEST_CASE("name_culprit: who the job waits for, and how sure") {
    const Row rows[] = {
        {"flight recorder alone: rank 2 one collective behind -> suspect",
         [] {
             auto e = four_ranks();
             with_dumps(e, "behind-by-one");
             return e;
         },
         HangFindingKind::suspect,
         2,
         {"flight_recorder"},
         "rank 2 (node-b GPU0 pid 1002) did not arrive at default_pg #20585 nccl:all_reduce [[1259621]] "
         "Float"},
        {"flight recorder + its GPU idle while the others spin -> culprit",
         [] {
             auto e = four_ranks();
             with_dumps(e, "behind-by-one");
             for (auto& r : e.ranks) r.gpu_state = r.rank == 2 ? idle_gpu() : spinning_gpu();
             return e;
         },
         HangFindingKind::culprit,
         2,
         {"flight_recorder", "gpu"},
         "GPU0 0 % vs peers 99 %"},
        {"every rank inside the same collective, GPUs spinning -> look at the fabric",
         [] {
             auto e = four_ranks();
             with_dumps(e, "all-inside");
             for (auto& r : e.ranks) r.gpu_state = spinning_gpu();
             return e;
         },
         HangFindingKind::all_waiting,
         -1,
         {},
         "all 4 ranks waiting inside the collective default_pg #20585 nccl:all_reduce [[1259621]] Float: "
         "look at "
         "the fabric"},
        {"RAS lowest count + main thread in D while the others spin -> culprit",
         [] {
             auto e = four_ranks();
             e.ras.push_back({"AllReduce", 6650, {{1, 6649}, {3, 6648}}});
             for (auto& r : e.ranks)
                 r.main_thread = r.rank == 3
                                     ? thread_doing(ThreadActivity::io_wait, 'D', "rpc_wait_bit_killable")
                                     : thread_doing(ThreadActivity::spinning, 'R');
             return e;
         },
         HangFindingKind::culprit,
         3,
         {"ras", "proc"},
         "main thread io_wait (D, wchan rpc_wait_bit_killable"},
        {"an Xid names its rank even without a spinning majority -> suspect",
         [] {
             auto e = four_ranks();
             for (auto& r : e.ranks) {
                 r.gpu_state = idle_gpu();
                 r.gpu_state->xid = r.rank == 1;
             }
             return e;
         },
         HangFindingKind::suspect,
         1,
         {"gpu"},
         "Xid"},
        {"sources disagree: the flight recorder's rank wins as a suspect",
         [] {
             auto e = four_ranks();
             with_dumps(e, "behind-by-one");
             for (auto& r : e.ranks) r.gpu_state = r.rank == 1 ? idle_gpu() : spinning_gpu();
             return e;
         },
         HangFindingKind::suspect,
         2,
         {"flight_recorder"},
         "rank 2"},
        {"two GPUs, one idle: no majority, no outlier -> all waiting",
         [] {
             auto e = four_ranks();
             e.ranks.resize(2);
             e.ranks[0].gpu_state = spinning_gpu();
             e.ranks[1].gpu_state = idle_gpu();
             return e;
         },
         HangFindingKind::all_waiting,
         -1,
         {},
         "look at the fabric"},
        {"nothing captured -> no evidence, said so",
         [] { return four_ranks(); },
         HangFindingKind::no_evidence,
         -1,
         {},
         "no rank evidence captured"},
    };
    for (const auto& row : rows) {
        CAPTURE(row.scenario);
        const HangFinding f = name_culprit(row.build());
        CHECK(to_string(f.kind) == std::string(to_string(row.kind)));
        CHECK(f.rank == row.rank);
        CHECK(f.sources == row.sources);
        CHECK_MESSAGE(f.line.find(row.line_has) != std::string::npos, f.line);
    }
}

TEST_CASE("the culprit line names node, GPU, pid, the collective and the waiting ranks") {
    auto e = four_ranks();
    with_dumps(e, "behind-by-one");
    for (auto& r : e.ranks) {
        r.gpu_state = r.rank == 2 ? idle_gpu() : spinning_gpu();
        r.main_thread = r.rank == 2 ? thread_doing(ThreadActivity::futex_wait, 'S', "futex_wait_queue")
                                    : thread_doing(ThreadActivity::spinning, 'R');
    }
    const HangFinding f = name_culprit(e);
    CHECK(f.kind == HangFindingKind::culprit);
    CHECK(f.sources == std::vector<std::string>{"flight_recorder", "gpu", "proc"});
    CHECK(f.host == "node-b");
    CHECK(f.gpu == 0);
    CHECK(f.pid == 1002);
    CHECK(f.waiting_ranks == 3);
    CHECK(f.line ==
          "HANG culprit: rank 2 (node-b GPU0 pid 1002) did not arrive at default_pg #20585 nccl:all_reduce "
          "[[1259621]] Float; 3 ranks wait inside. Evidence: FR last_enqueued 20584 vs 20585; GPU0 0 % vs "
          "peers "
          "99 %; main thread futex_wait (S, wchan futex_wait_queue, 0 % CPU)");
    const Json j = to_json(f);
    CHECK(j["kind"] == "culprit");
    CHECK(j["rank"] == 2);
}
