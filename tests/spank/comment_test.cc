#include <doctest/doctest.h>

#include "spank/comment.h"

using namespace stallscope::spank;

TEST_CASE("a well-formed helper line survives sanitizing unchanged (minus the newline)") {
    auto s = sanitize_segment(
        "stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=3600 file=/p/v.json\n");
    REQUIRE(s);
    CHECK(*s == "stallscope/1 SLOW conf=0.80 top=fabric_congestion:mlx5_0/1 gpus=8 dur=3600 file=/p/v.json");
}

TEST_CASE("helper lines that are not ours are refused") {
    CHECK_FALSE(sanitize_segment(""));
    CHECK_FALSE(sanitize_segment("JS1:abc"));
    CHECK_FALSE(sanitize_segment("stallscope/2 SLOW"));
    CHECK_FALSE(sanitize_segment("stallscope/1 "));
    CHECK_FALSE(sanitize_segment("stallscope/1 SLOW\x1b[31m"));
    CHECK_FALSE(sanitize_segment("stallscope/1 SLOW caf\xc3\xa9"));
    CHECK_FALSE(sanitize_segment(std::string("stallscope/1 SLOW\0x", 19)));
}

TEST_CASE("sanitizing keeps the first line, replaces our separator and caps the length") {
    CHECK(*sanitize_segment("stallscope/1 FAST a=1\nstallscope/1 SLOW") == "stallscope/1 FAST a=1");
    CHECK(*sanitize_segment("stallscope/1 FAST file=/a;b") == "stallscope/1 FAST file=/a,b");
    auto long_one = sanitize_segment("stallscope/1 SLOW " + std::string(2000, 'x'));
    REQUIRE(long_one);
    CHECK(long_one->size() == kSegmentCap);
}

TEST_CASE("merging into an empty AdminComment gives just our segment") {
    CHECK(*merge_comment("", "stallscope/1 FAST x=1") == "stallscope/1 FAST x=1");
}

TEST_CASE("foreign AdminComment content (jobstats JS1) survives byte for byte") {
    CHECK(*merge_comment("JS1:H4sIAAAA==", "stallscope/1 FAST x=1") ==
          "JS1:H4sIAAAA==; stallscope/1 FAST x=1");
    CHECK(*merge_comment("a;b  c", "stallscope/1 FAST") == "a;b  c; stallscope/1 FAST");
}

TEST_CASE("an existing stallscope segment is replaced, wherever it is") {
    CHECK(*merge_comment("stallscope/1 SLOW old", "stallscope/1 FAST new") == "stallscope/1 FAST new");
    CHECK(*merge_comment("JS1:x; stallscope/1 SLOW old", "stallscope/1 FAST new") ==
          "JS1:x; stallscope/1 FAST new");
    CHECK(*merge_comment("stallscope/1 SLOW old; JS1:x", "stallscope/1 FAST new") ==
          "JS1:x; stallscope/1 FAST new");
    CHECK(*merge_comment("A; stallscope/0 X; B", "stallscope/1 FAST") == "A; B; stallscope/1 FAST");
}

TEST_CASE("the merged comment never exceeds 1024 characters and never drops foreign content") {
    std::string foreign(900, 'j');
    std::string segment = "stallscope/1 SLOW " + std::string(400, 'x');
    auto merged = merge_comment(foreign, segment);
    REQUIRE(merged);
    CHECK(merged->size() <= kCommentCap);
    CHECK(merged->substr(0, 900) == foreign);
    CHECK_FALSE(merge_comment(std::string(1010, 'j'), segment));
}

TEST_CASE("segment_file finds the verdict path") {
    CHECK(segment_file("stallscope/1 FAST gpus=2 file=/w/stallscope-5/verdict.0.n1.json") ==
          "/w/stallscope-5/verdict.0.n1.json");
    CHECK(segment_file("stallscope/1 FAST gpus=2") == "");
    CHECK(segment_file("stallscope/1 FAST xfile=/nope") == "");
}

TEST_CASE("comment_rank: any real verdict beats UNKNOWN, worse labels beat better ones") {
    CHECK(comment_rank("stallscope/1 UNKNOWN conf=0.00 top=step_too_short") == 0);
    CHECK(comment_rank("stallscope/1 FAST conf=0.90 gpus=8") == 1);
    CHECK(comment_rank("stallscope/1 SLOW conf=0.70 top=gpu_idle") == 2);
    CHECK(comment_rank("stallscope/1 FAIL_RISK conf=0.95 top=gpu_xid:79") == 3);
    CHECK(comment_rank("stallscope/1 FASTER conf=1") == -1);
    CHECK(comment_rank("JS1:abc") == -1);
    CHECK(comment_rank("") == -1);
}

TEST_CASE(
    "last_segment: the job writer's merged line wins, a node line is kept when the merge was cut (I2)") {
    const std::string node =
        "stallscope/1 SLOW conf=0.80 top=gpu_idle gpus=8/8 dur=60 node=n1 file=/w/verdict.0.n1.json";
    const std::string job =
        "stallscope/1 FAIL_RISK conf=0.93 top=gpu_xid:n2:79 nodes=2 gpus=16 dur=60 node=n2";
    // Both lines: the merged job segment.
    CHECK(last_segment(node + "\n" + job + "\n") == job);
    // SIGKILLed during the merge: only the node segment (the old plugin read the first line only, and
    // the old helper printed nothing before the merge: no comment at all).
    CHECK(last_segment(node + "\n") == node);
    // SIGKILLed while writing the job segment: the cut line is not used.
    CHECK(last_segment(node + "\n" + job.substr(0, 30)) == node);
    // A garbage line after a good one (any process of the user can write fd 3): the good one stays.
    CHECK(last_segment(node + "\n\x1b[2Jjunk\n") == node);
    CHECK(last_segment(job + "\nstallscope/1 FAST a=1;b\n") == "stallscope/1 FAST a=1,b");
    CHECK_FALSE(last_segment(""));
    CHECK_FALSE(last_segment(node));  // never terminated
    CHECK_FALSE(last_segment("JS1:abc\n"));
}
