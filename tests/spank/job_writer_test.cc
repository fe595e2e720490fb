#include "spank/job_writer.h"

#include <doctest/doctest.h>

using namespace stallscope::spank;

TEST_CASE("the batch step writes a batch job's comment; other steps only from node 0 without a batch step") {
    CHECK(is_job_writer(kBatchStepId, 0, false));
    CHECK(is_job_writer(0, 0, false));        // srun-only / salloc step, node 0
    CHECK_FALSE(is_job_writer(0, 1, false));  // not node 0
    CHECK_FALSE(is_job_writer(0, 0, true));   // the batch step recorded on this node: it writes
    CHECK_FALSE(is_job_writer(3, 2, true));
}

TEST_CASE("merge_wait stays below stop_timeout") {
    CHECK(merge_wait_for(10) == 5);
    CHECK(merge_wait_for(5) == 3);
    CHECK(merge_wait_for(2) == 0);
    CHECK(merge_wait_for(0) == 0);
}

TEST_CASE("the plugin holds the sampler lock: --lock-file is dropped from the helper's argv") {
    CHECK(without_lock_file({"h", "record", "--lock-file", "/run/x", "--liveness-fd", "3"}) ==
          std::vector<std::string>{"h", "record", "--liveness-fd", "3"});
    CHECK(without_lock_file({"h", "record"}) == std::vector<std::string>{"h", "record"});
}

TEST_CASE("job_epilog accepts only the helper's own fallback directory form") {
    const std::string out = "/home/u/stallscope-42";
    CHECK(accepted_fallback_dir("/tmp/stallscope-1000/stallscope-42", 1000, out));
    CHECK(accepted_fallback_dir("/scratch/tmp/stallscope-1000/stallscope-42", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("/tmp/stallscope-1001/stallscope-42", 1000, out));  // other uid
    CHECK_FALSE(accepted_fallback_dir("/tmp/stallscope-1000/stallscope-43", 1000, out));  // other job
    CHECK_FALSE(accepted_fallback_dir("/etc", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("/tmp/stallscope-1000/../../etc/stallscope-42", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("/tmp/stallscope-1000//stallscope-42", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("/tmp/stallscope-1000/stallscope-42/", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("tmp/stallscope-1000/stallscope-42", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("", 1000, out));
    CHECK_FALSE(accepted_fallback_dir("/stallscope-42", 1000, out));
}
