// nccl-tests all_reduce_perf: stdout table + footer, -J JSON, garbage; the runner against a fake
// all_reduce_perf script (exec'd directly, no shell command line), exit codes and the time bound.
#include <doctest/doctest.h>

#include "libstallscope/sources/nccl/nccl_tests.h"
#include "nccl_test_util.h"

using namespace stallscope;
using namespace stallscope::nccl;
using namespace stallscope::test;

namespace {

const std::string kFake = std::string(STALLSCOPE_TESTS_DIR) + "/sources/nccl/fake_all_reduce_perf";

}  // namespace

TEST_CASE("the 2-node table: footer average, peak busbw at the largest size, no wrong values") {
    const auto r = parse_nccl_tests_output(nccl_fixture("nccl_tests/all_reduce_perf_2node.txt"));
    CHECK(r.outcome.empty());
    CHECK(r.rows == 16);
    REQUIRE(r.avg_busbw_gbs);
    CHECK(*r.avg_busbw_gbs == doctest::Approx(113.095));
    REQUIRE(r.peak_busbw_gbs);
    CHECK(*r.peak_busbw_gbs == doctest::Approx(372.00));
    CHECK(*r.peak_size_bytes == 8589934592ull);
    REQUIRE(r.wrong);
    CHECK(*r.wrong == 0);
}

TEST_CASE("#wrong is summed; -c 0 prints N/A and the count is unknown, not 0") {
    CHECK(*parse_nccl_tests_output(nccl_fixture("nccl_tests/all_reduce_perf_wrong.txt")).wrong == 3);
    const auto nocheck = parse_nccl_tests_output(nccl_fixture("nccl_tests/all_reduce_perf_nocheck.txt"));
    CHECK_FALSE(nocheck.wrong);
    CHECK(nocheck.rows == 16);
}

TEST_CASE("a failure tail is kept as an error; garbage is garbage") {
    const auto f = parse_nccl_tests_output(nccl_fixture("nccl_tests/all_reduce_perf_nccl_failure.txt"));
    REQUIRE(f.errors.size() == 1);
    CHECK(f.errors[0].find("Test NCCL failure common.cu:401") != std::string::npos);
    CHECK_FALSE(f.avg_busbw_gbs);
    CHECK(parse_nccl_tests_output(nccl_fixture("nccl_tests/garbage.txt")).outcome == "garbage");
    CHECK(parse_nccl_tests_json("not json").outcome == "garbage");
}

TEST_CASE("-J JSON: string booleans, bus_bw, nwrong, average bandwidth, empty error string") {
    const auto r = parse_nccl_tests_json(nccl_fixture("nccl_tests/all_reduce_perf.json"));
    CHECK(r.outcome.empty());
    CHECK(r.rows == 2);
    CHECK(*r.avg_busbw_gbs == doctest::Approx(113.095));
    CHECK(*r.peak_busbw_gbs == doctest::Approx(372.000355));
    CHECK(*r.wrong == 0);
    CHECK(r.errors.empty());
}

TEST_CASE("exit codes map to reasons") {
    CHECK(std::string(nccl_tests_exit_outcome(0)) == "ok");
    CHECK(std::string(nccl_tests_exit_outcome(3)) == "nccl_error");
    CHECK(std::string(nccl_tests_exit_outcome(4)) == "timeout");
    CHECK(std::string(nccl_tests_exit_outcome(7)) == "wrong_data");
    CHECK(std::string(nccl_tests_exit_outcome(42)) == "failed");
}

TEST_CASE("the runner: arguments passed through, table parsed, exit 7 -> wrong_data") {
    ::setenv("FAKE_NCCL_TESTS_OUTPUT", nccl_fixture_path("nccl_tests/all_reduce_perf_2node.txt").c_str(), 1);
    ::setenv("FAKE_NCCL_TESTS_EXIT", "0", 1);
    ::unsetenv("FAKE_NCCL_TESTS_SLEEP");
    auto ok = run_nccl_test(kFake, {"-b", "1G", "-e", "1G"}, std::chrono::seconds(20));
    CHECK(ok.outcome == "ok");
    CHECK(ok.exit_code == 0);
    CHECK(*ok.peak_busbw_gbs == doctest::Approx(372.0));
    CHECK(ok.command == kFake + " -b 1G -e 1G");
    ::setenv("FAKE_NCCL_TESTS_OUTPUT", nccl_fixture_path("nccl_tests/all_reduce_perf_wrong.txt").c_str(), 1);
    ::setenv("FAKE_NCCL_TESTS_EXIT", "7", 1);
    auto wrong = run_nccl_test(kFake, {}, std::chrono::seconds(20));
    CHECK(wrong.outcome == "wrong_data");
    CHECK(wrong.exit_code == 7);
    CHECK(*wrong.wrong == 3);
    ::setenv("FAKE_NCCL_TESTS_EXIT", "3", 1);
    CHECK(run_nccl_test(kFake, {}, std::chrono::seconds(20)).outcome == "nccl_error");
    ::unsetenv("FAKE_NCCL_TESTS_EXIT");
}

TEST_CASE("the runner kills a hung all_reduce_perf at its deadline; a missing one is not_found") {
    ::unsetenv("FAKE_NCCL_TESTS_OUTPUT");
    ::setenv("FAKE_NCCL_TESTS_SLEEP", "30", 1);
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_nccl_test(kFake, {}, std::chrono::milliseconds(500));
    CHECK(r.outcome == "timeout");
    CHECK(seconds_since(start) < 2.0);
    ::unsetenv("FAKE_NCCL_TESTS_SLEEP");
    const auto missing = run_nccl_test("all_reduce_perf_that_does_not_exist", {}, std::chrono::seconds(1));
    CHECK(missing.outcome == "not_found");
}
