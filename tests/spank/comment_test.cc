#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "spank/comment.h"

using namespace stallscope::spank;

namespace {
std::string fixture(const std::string& name) {
    std::ifstream in(std::string(STALLSCOPE_TESTS_DIR) + "/spank/fixtures/" + name);
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
}  // namespace

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

TEST_CASE("scontrol (22.05 capture): AdminComment with spaces, '=' and our segment is read exactly") {
    auto r = parse_scontrol_admin_comment(fixture("scontrol_show_job_admincomment.txt"),
                                          fixture("scontrol_show_job_admincomment.oneline.txt"), "13");
    CHECK(r.state == AdminCommentRead::present);
    CHECK(r.value == "JS1:abc def Foo=bar; stallscope/1 SLOW conf=0.80 top=x gpus=8 dur=10 file=/a b/v.json");
}

TEST_CASE("scontrol (22.05 capture): no AdminComment line means absent, the user's Comment is not taken") {
    auto r = parse_scontrol_admin_comment(fixture("scontrol_show_job_plain.txt"),
                                          fixture("scontrol_show_job_plain.oneline.txt"), "14");
    CHECK(r.state == AdminCommentRead::absent);
    CHECK(r.value.empty());
}

TEST_CASE("scontrol (22.05 capture): a job name forging an AdminComment line is detected") {
    std::string multi = fixture("scontrol_show_job_forged.txt");
    REQUIRE(multi.find("\n   AdminComment=forged") != std::string::npos);
    auto r = parse_scontrol_admin_comment(multi, fixture("scontrol_show_job_forged.oneline.txt"), "15");
    CHECK(r.state == AdminCommentRead::ambiguous);
}

TEST_CASE("scontrol: a rename raced between the two reads cannot forge AdminComment (issue 17)") {
    // Multi-line read while JobName was "x\n   AdminComment=JS1:FAKE"; the one-liner after the user
    // renamed the job back to "x" is one clean line. The old parser took "JS1:FAKE".
    std::string multi = fixture("scontrol_show_job_race.txt");
    std::string one = fixture("scontrol_show_job_race.oneline.txt");
    REQUIRE(multi.find("\n   AdminComment=JS1:FAKE\n") != std::string::npos);
    REQUIRE(one.find('\n') == one.size() - 1);
    auto r = parse_scontrol_admin_comment(multi, one, "14");
    CHECK(r.state == AdminCommentRead::ambiguous);
    CHECK(r.value.empty());
}

TEST_CASE("scontrol: forged AdminComment lines anywhere but right after WorkDir are never read") {
    const std::string real = fixture("scontrol_show_job_admincomment.txt");
    const std::string real_one = fixture("scontrol_show_job_admincomment.oneline.txt");
    // A real AdminComment plus a forged one in the job name: two candidates.
    std::string two = real;
    two.replace(two.find("JobName=train\n"), 14, "JobName=x\n   AdminComment=JS1:FAKE\n");
    CHECK(parse_scontrol_admin_comment(two, real_one, "13").state == AdminCommentRead::ambiguous);
    // No real one; the user's Comment (set with scontrol update, mutable) carries the forged line.
    std::string plain = fixture("scontrol_show_job_plain.txt");
    std::string in_comment = plain;
    in_comment.replace(in_comment.find("Comment=user note \n"), 19, "Comment=n\n   AdminComment=JS1:FAKE \n");
    CHECK(parse_scontrol_admin_comment(in_comment, fixture("scontrol_show_job_plain.oneline.txt"), "14")
              .state == AdminCommentRead::ambiguous);
    // A forged WorkDir line ahead of the real one: two WorkDir lines.
    std::string workdir_twice = plain;
    workdir_twice.replace(workdir_twice.find("JobName=plain\n"), 14,
                          "JobName=x\n   WorkDir=/w\n   AdminComment=JS1:FAKE\n");
    CHECK(parse_scontrol_admin_comment(workdir_twice, fixture("scontrol_show_job_plain.oneline.txt"), "14")
              .state == AdminCommentRead::ambiguous);
    // The multi-line value must match the one-liner's: a one-liner read after an admin changed it.
    std::string other_one = real_one;
    other_one.replace(other_one.find("AdminComment=JS1:abc"), 20, "AdminComment=JS1:xyz");
    CHECK(parse_scontrol_admin_comment(real, other_one, "13").state == AdminCommentRead::ambiguous);
}

TEST_CASE("scontrol: a WorkDir made to look like an AdminComment field is read as absent, not forged") {
    auto r = parse_scontrol_admin_comment(fixture("scontrol_show_job_workdir_spaces.txt"),
                                          fixture("scontrol_show_job_workdir_spaces.oneline.txt"), "14");
    CHECK(r.state == AdminCommentRead::absent);
    CHECK(r.value.empty());
}

TEST_CASE("scontrol output of another job or an error message is not trusted") {
    std::string multi = fixture("scontrol_show_job_plain.txt");
    std::string one = fixture("scontrol_show_job_plain.oneline.txt");
    CHECK(parse_scontrol_admin_comment(multi, one, "1").state == AdminCommentRead::ambiguous);
    CHECK(parse_scontrol_admin_comment("slurm_load_jobs error: Invalid job id specified\n", "", "14").state ==
          AdminCommentRead::ambiguous);
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

TEST_CASE("scontrol on a job array: only the record whose JobId is ours is read") {
    // `scontrol show job 13` of an array prints every task; task 14's record comes first here.
    const std::string real = fixture("scontrol_show_job_admincomment.txt");
    const std::string real_one = fixture("scontrol_show_job_admincomment.oneline.txt");
    std::string other = fixture("scontrol_show_job_plain.txt");
    std::string other_one = fixture("scontrol_show_job_plain.oneline.txt");
    REQUIRE(other.rfind("JobId=14 ", 0) == 0);
    const std::string multi = other + "\n" + real, one = other_one + real_one;
    auto r = parse_scontrol_admin_comment(multi, one, "13");
    CHECK(r.state == AdminCommentRead::present);
    CHECK(r.value.rfind("JS1:abc def Foo=bar; stallscope/1 SLOW", 0) == 0);
    // Task 14 has none of its own.
    CHECK(parse_scontrol_admin_comment(multi, one, "14").state == AdminCommentRead::absent);
    // A second record claiming our id (a name forging "\nJobId=13 ...") makes it ambiguous.
    CHECK(parse_scontrol_admin_comment(multi + "\n" + real, one + real_one, "13").state ==
          AdminCommentRead::ambiguous);
}
