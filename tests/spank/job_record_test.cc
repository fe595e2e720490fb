// spank/job_record.h: AdminComment from the job record in JSON (issue 36, M1). Synthetic records with the
// review's attack names, then every capture under fixtures/slurm/<release>/ (tests/integration/
// capture_scontrol_fixture.sh): `scontrol --json show job` (Slurm >= 23.02) and stallscope-slurm-job's
// output (every release), each of a job whose name holds newlines, "\n\n", "AdminComment=" and
// "; stallscope/1 FAST", and whose AdminComment is a jobstats segment plus ours.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "spank/comment.h"
#include "spank/job_record.h"

using namespace stallscope::spank;
using Json = nlohmann::json;

namespace {

const std::string kReal =
    "JS1:abc def Foo=bar; stallscope/1 SLOW conf=0.80 top=x gpus=8 dur=10 file=/a b/v.json";

// The review's names (M1): delete = A/B, forge = A/B; plus the fixture capture's own.
const std::vector<std::string> kNastyNames = {
    "x\n   WorkDir=/f\n\nz",
    "x",
    "x\n   WorkDir=/f\n   AdminComment=JS1:FORGED_BY_USER\n\nz",
    "x WorkDir=/f AdminComment=JS1:FORGED_BY_USER z",
    "x\n   AdminComment=JS1:FAKE",
    "n\n\nJobId=13 JobName=x\n   AdminComment=JS1:FORGED; stallscope/1 FAST conf=1.00 file=/tmp/evil\n\n",
    "\", \"admin_comment\": \"JS1:FORGED\", \"x\": \"",
    "}]}{\"jobs\":[{\"job_id\":13,\"admin_comment\":\"JS1:FORGED\"}]}",
};

std::string record(const std::string& name, const Json& admin_comment, int job_id = 13) {
    Json job = {{"job_id", job_id}, {"name", name}, {"comment", name}, {"current_working_directory", "/w"}};
    job["admin_comment"] = admin_comment;
    return Json{{"jobs", {job}}, {"errors", Json::array()}, {"warnings", Json::array()}}.dump(2);
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("M1: no job name, renamed between reads or not, moves the AdminComment field") {
    for (const std::string& name : kNastyNames) {
        INFO(name);
        const JobAdminComment r = parse_job_record_json(record(name, kReal), "13");
        CHECK(r.state == AdminCommentRead::present);
        CHECK(r.value == kReal);
        // The whole write path: only our segment changes, every other byte stays.
        CHECK(merge_comment(r.value, "stallscope/1 FAST conf=0.90 gpus=1 dur=10 node=vm") ==
              "JS1:abc def Foo=bar; stallscope/1 FAST conf=0.90 gpus=1 dur=10 node=vm");
        CHECK(parse_job_record_json(record(name, ""), "13").state == AdminCommentRead::absent);
    }
}

TEST_CASE("job record: absent, null, compact and pretty forms; the slurmdb comment form") {
    CHECK(parse_job_record_json(record("a", nullptr), "13").state == AdminCommentRead::absent);
    const std::string compact = R"({"jobs":[{"job_id":13,"admin_comment":"JS1:a; stallscope/1 SLOW"}]})";
    CHECK(parse_job_record_json(compact, "13").value == "JS1:a; stallscope/1 SLOW");
    const std::string nested = R"({"jobs":[{"job_id":13,"comment":{"administrator":"JS1:n","job":"u"}}]})";
    CHECK(parse_job_record_json(nested, "13").value == "JS1:n");
    const std::string both =
        R"({"jobs":[{"job_id":13,"admin_comment":"a","comment":{"administrator":"a"}}]})";
    CHECK(parse_job_record_json(both, "13").value == "a");
    const std::string differ =
        R"({"jobs":[{"job_id":13,"admin_comment":"a","comment":{"administrator":"b"}}]})";
    CHECK(parse_job_record_json(differ, "13").state == AdminCommentRead::ambiguous);
    // data_parser's number object for ids.
    const std::string wrapped =
        R"({"jobs":[{"job_id":{"set":true,"infinite":false,"number":13},"admin_comment":"JS1:w"}]})";
    CHECK(parse_job_record_json(wrapped, "13").value == "JS1:w");
    // Non-ASCII foreign content is kept byte for byte (JSON \u escapes decoded to UTF-8).
    CHECK(
        parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":"caf\u00e9 \u2713"}]})", "13").value ==
        "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST_CASE("job record: a key we do not know is never read as 'no AdminComment' (that would wipe it)") {
    const JobAdminComment r =
        parse_job_record_json(R"({"jobs":[{"job_id":13,"adminComment":"JS1:x"}]})", "13");
    CHECK(r.state == AdminCommentRead::ambiguous);
    CHECK(r.why.find("no admin_comment") != std::string::npos);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":7}]})", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":["JS1"]}]})", "13").state ==
          AdminCommentRead::ambiguous);
}

TEST_CASE("job record: arrays (other tasks skipped), duplicates, other jobs, errors") {
    const std::string two = R"({"jobs":[{"job_id":14,"array_job_id":13,"admin_comment":"other"},)"
                            R"({"job_id":13,"array_job_id":13,"admin_comment":"JS1:mine"}]})";
    CHECK(parse_job_record_json(two, "13").value == "JS1:mine");
    CHECK(parse_job_record_json(two, "14").value == "other");
    CHECK(parse_job_record_json(two, "15").state == AdminCommentRead::ambiguous);
    const std::string twice =
        R"({"jobs":[{"job_id":13,"admin_comment":"a"},{"job_id":13,"admin_comment":"b"}]})";
    CHECK(parse_job_record_json(twice, "13").state == AdminCommentRead::ambiguous);
    const JobAdminComment err = parse_job_record_json(
        R"({"jobs":[],"errors":[{"description":"Invalid job id\nspecified\u001b[2J","error_number":2017}]})",
        "13");
    CHECK(err.state == AdminCommentRead::ambiguous);
    CHECK(err.why.find("Invalid job id%0aspecified%1b[2J") != std::string::npos);  // escaped for the log
    CHECK(parse_job_record_json(R"({"jobs":[{"admin_comment":"x"}]})", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":-13,"admin_comment":"x"}]})", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":"x"}]})", "13x").state ==
          AdminCommentRead::ambiguous);
}

TEST_CASE("job record: repeated keys, trailing bytes, invalid UTF-8, size and depth are refused") {
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":"a","admin_comment":"b"}]})", "13")
              .state == AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":"a"}],"jobs":[]})", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json(R"({"jobs":[{"job_id":13,"admin_comment":"a"}]} {"jobs":[]})", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json("{\"jobs\":[{\"job_id\":13,\"admin_comment\":\"caf\xe9\"}]}", "13").state ==
          AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json("", "13").state == AdminCommentRead::ambiguous);
    CHECK(parse_job_record_json("[]", "13").state == AdminCommentRead::ambiguous);
    // Size: a record at the reader's output cap may have been cut.
    std::string big = record(std::string(kJobRecordCap, 'n'), "JS1:x");
    CHECK(parse_job_record_json(big, "13").state == AdminCommentRead::ambiguous);
    // Depth: refused before anything deep is built (the L3 class).
    std::string deep = R"({"jobs":[{"job_id":13,"admin_comment":"x","deep":)";
    for (int i = 0; i < 100000; ++i) deep += '[';
    const JobAdminComment d = parse_job_record_json(deep, "13");
    CHECK(d.state == AdminCommentRead::ambiguous);
    CHECK(d.why.find("nested deeper") != std::string::npos);
    std::string ok = R"({"jobs":[{"job_id":13,"admin_comment":"x","deep":)";
    for (int i = 0; i < kJobRecordMaxDepth - 3; ++i) ok += '[';
    for (int i = 0; i < kJobRecordMaxDepth - 3; ++i) ok += ']';
    ok += "}]}";
    CHECK(parse_job_record_json(ok, "13").value == "x");
}

TEST_CASE("every captured job record (fixtures/slurm/<release>/) gives the AdminComment set at capture") {
    const std::filesystem::path root = std::filesystem::path(STALLSCOPE_FIXTURES_DIR) / "slurm";
    int read = 0;
    REQUIRE(std::filesystem::is_directory(root));
    for (const auto& release : std::filesystem::directory_iterator(root)) {
        const std::filesystem::path capture = release.path() / "capture.json";
        if (!std::filesystem::exists(capture)) continue;
        const Json expect = Json::parse(slurp(capture));
        for (const char* kind : {"", "_array"}) {
            const std::string key = std::string("job") + kind;
            if (!expect.contains(key)) continue;
            const Json& job = expect[key];
            const std::string id = std::to_string(job["job_id"].get<unsigned long>());
            for (const char* form : {"scontrol_show_job", "slurm_job"}) {
                const std::filesystem::path file = release.path() / (std::string(form) + kind + ".json");
                if (!std::filesystem::exists(file)) continue;
                INFO(file.string());
                const std::string text = slurp(file);
                const JobAdminComment r = parse_job_record_json(text, id);
                CHECK(r.why == "");
                CHECK(r.state == AdminCommentRead::present);
                CHECK(r.value == job["admin_comment"].get<std::string>());
                // The nasty name is in the record, whole, as one JSON string (scontrol prints it; our
                // reader prints no name at all).
                const Json record = Json::parse(text);  // kept: a range-for over a temporary's member dangles
                for (const Json& rec : record["jobs"])
                    if (rec.contains("name") && rec["job_id"] == job["job_id"])
                        CHECK(rec["name"] == job["name"]);
                // Another task of the array is not ours.
                if (job.contains("other_task_id"))
                    CHECK(
                        parse_job_record_json(text, std::to_string(job["other_task_id"].get<unsigned long>()))
                            .value != job["admin_comment"].get<std::string>());
                ++read;
            }
        }
    }
    // At least one capture must be there (22.05's is stallscope-slurm-job's: its scontrol has no --json).
    CHECK(read > 0);
}
