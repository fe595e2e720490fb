// NCCL debug files and PyTorch logs -> structured events (research notes 5.1-5.4), bounded tail.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "libstallscope/sources/nccl/log_scan.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::nccl;
using namespace stallscope::test;

namespace {

std::vector<NcclLogEvent> classify_all(const std::string& text) {
    std::vector<NcclLogEvent> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        NcclLogEvent e;
        if (classify_log_line(text.substr(pos, nl - pos), e)) out.push_back(e);
        pos = nl + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("IB completion errors of every version shape: status, peer, hca, vendor err, host and pid") {
    const auto ev = classify_all(nccl_fixture("logs/nccl.node002.3490012.log"));
    std::vector<const NcclLogEvent*> wc;
    for (const auto& e : ev)
        if (e.kind == "ib_wc_error") wc.push_back(&e);
    REQUIRE(wc.size() == 3);
    // 2.26+ with timestamp prefix
    CHECK(wc[0]->host == "node002");
    CHECK(wc[0]->pid == 3490012);
    CHECK(wc[0]->fields.at("status") == "12");
    CHECK(wc[0]->fields.at("peer") == "10.0.0.1");
    CHECK(wc[0]->fields.at("hca") == "mlx5_10");
    CHECK(wc[0]->fields.at("vendor_err") == "129");
    // 2.12-2.19 "with error N"
    CHECK(wc[1]->fields.at("status") == "12");
    CHECK(wc[1]->fields.at("peer") == "10.0.0.3");
    // 2.29+ "status=IBV_WC_RETRY_EXC_ERR(12)" with the (function) form of master
    CHECK(wc[2]->fields.at("status") == "12");
    CHECK(wc[2]->fields.at("status_name") == "IBV_WC_RETRY_EXC_ERR");
    CHECK(wc[2]->fields.at("hca") == "mlx5_2");
}

TEST_CASE("IB async events: fatal vs non-fatal; other WARN lines are kept as nccl_warn; INFO is ignored") {
    const auto ev = classify_all(nccl_fixture("logs/nccl.node002.3490012.log"));
    int fatal = 0, nonfatal = 0, warn = 0;
    for (const auto& e : ev) {
        if (e.kind == "ib_async") (e.fields.at("fatal") == "true" ? fatal : nonfatal)++;
        if (e.kind == "nccl_warn") ++warn;
        CHECK(e.line.find("NCCL INFO") == std::string::npos);
    }
    CHECK(fatal == 1);
    CHECK(nonfatal == 1);
    CHECK(warn == 1);  // socketProgress: Connection closed by remote peer
}

TEST_CASE("PyTorch watchdog timeout, status, heartbeat and NCCL error lines, with rank") {
    const auto ev = classify_all(nccl_fixture("logs/torch_rank3.log"));
    REQUIRE(ev.size() == 5);
    CHECK(ev[0].kind == "pt_watchdog_timeout");
    CHECK(ev[0].rank == 3);
    CHECK(ev[0].fields.at("seq") == "20585");
    CHECK(ev[0].fields.at("op") == "ALLREDUCE");
    CHECK(ev[0].fields.at("timeout_ms") == "600000");
    CHECK(ev[0].fields.at("ran_ms") == "600012");
    CHECK(ev[1].kind == "pt_watchdog_status");
    CHECK(ev[1].fields.at("last_completed") == "20584");
    CHECK(ev[2].kind == "pt_heartbeat");
    CHECK(ev[2].fields.at("stuck_seconds") == "480");
    CHECK(ev[3].kind == "nccl_error");
    CHECK(ev[3].fields.at("error") == "remote process exited or there was a network error");
    CHECK(ev[3].fields.at("nccl_version") == "2.30.7");
    CHECK(ev[4].kind == "pt_watchdog_timeout");  // PyTorch ~2.0 shape, no SeqNum
    CHECK(ev[4].rank == 1);
    CHECK(ev[4].fields.at("op") == "BROADCAST");
    CHECK(ev[4].fields.count("seq") == 0);
}

TEST_CASE("garbage and binary lines are not events") {
    NcclLogEvent e;
    CHECK_FALSE(classify_log_line("", e));
    CHECK_FALSE(classify_log_line(std::string("\0\xff\xfe NET", 7), e));
    CHECK_FALSE(classify_log_line("epoch 3 loss 0.25", e));
}

TEST_CASE("NCCL_DEBUG_FILE patterns expand to globs; comma lists split") {
    CHECK(debug_file_glob("/scratch/j/nccl.%h.%p.log", "node002") == "/scratch/j/nccl.node002.*.log");
    CHECK(debug_file_glob("/tmp/nccl.log", "n") == "/tmp/nccl.log");
    CHECK(debug_file_glob("/tmp/100%%.%p", "n") == "/tmp/100%.*");
    CHECK(split_paths(" /a/*.log, /b/x.log,,") == std::vector<std::string>{"/a/*.log", "/b/x.log"});
}

TEST_CASE("the scanner follows globbed files, reports only new lines, caps events per sample") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("stallscope-logs-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "nccl.node002.77.log").string();
    std::filesystem::copy_file(nccl_fixture_path("logs/nccl.node002.3490012.log"), path,
                               std::filesystem::copy_options::overwrite_existing);
    LogScanLimits limits;
    limits.max_events = 2;
    LogScanner scanner({(dir / "nccl.*.log").string(), (dir / "missing-*.log").string()}, limits);
    std::vector<std::string> warnings;
    auto first = scanner.scan(warnings);
    CHECK(first.size() == 2);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("more matching lines") != std::string::npos);
    CHECK(first[0].file == path);
    warnings.clear();
    CHECK(scanner.scan(warnings).empty());  // nothing new
    {
        std::ofstream(path, std::ios::app)
            << "[rank5]:[E0714 10:00:00.1 ProcessGroupNCCL.cpp:1] [Rank 5] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLGATHER, NumelIn=1, NumelOut=8, "
               "Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n";
    }
    auto next = scanner.scan(warnings);
    REQUIRE(next.size() == 1);
    CHECK(next[0].rank == 5);
    CHECK(warnings.empty());
}
