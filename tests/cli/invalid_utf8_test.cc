// Text that is not UTF-8 where users put it: a job name typed on a Latin-1 terminal (`sbatch -J`), an
// output directory or timeline path under a Latin-1 home. JSON text must be UTF-8 and nlohmann's dump()
// throws on anything else, which ended the CLI with "internal error" and lost the helper's verdict file.
// Every JSON the binary writes now replaces such bytes (U+FFFD) and goes on; so for bytes a source read
// (a netdev name: the kernel allows any byte but '/', ':' and whitespace).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "libstallscope/model/snapshot_json.h"
#include "tests/cli/fixture_env.h"
#include "tests/support/run_process.h"

using namespace stallscope;
using namespace stallscope::test;

namespace {

const std::string kLatin1Name = "r\xe9sum\xe9-run";                // "résumé-run" in ISO-8859-1
const std::string kReplaced = "r\xef\xbf\xbdsum\xef\xbf\xbd-run";  // each bad byte as U+FFFD

std::vector<std::string> job_env_named(const std::string& job_name) {
    auto env = fixture_node_env("vm");
    for (const char* v : {"SLURM_JOB_ID=4243", "SLURM_STEP_ID=0", "SLURM_NODEID=0", "SLURM_JOB_NODELIST=vm"})
        env.push_back(v);
    env.push_back("SLURM_JOB_NAME=" + job_name);
    return env;
}

// The one file in `dir` whose name starts with `prefix` ("verdict.0.": the host part is this machine's).
std::string the_only_file(const std::string& dir, const std::string& prefix) {
    std::string found;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().filename().string().rfind(prefix, 0) == 0) {
            REQUIRE_MESSAGE(found.empty(), "two files named " << prefix << "* in " << dir);
            found = entry.path().string();
        }
    REQUIRE_MESSAGE(!found.empty(), "no " << prefix << "* in " << dir);
    return found;
}

Json read_json_at(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), path);
    return Json::parse(in);
}

}  // namespace

TEST_CASE("a Latin-1 job name: one-shot and periodic --json print valid JSON with U+FFFD, exit 0") {
    const auto env = job_env_named(kLatin1Name);
    const auto once = run_process({STALLSCOPE_EXE, "--json"}, env);
    CHECK_MESSAGE(once.exit_code == 0, once.err);
    CHECK(Json::parse(once.out)["context"]["job_name"] == kReplaced);

    const auto periodic =
        run_process({STALLSCOPE_EXE, "--interval-seconds", "0.05", "--count", "2", "--json"}, env);
    CHECK_MESSAGE(periodic.exit_code == 0, periodic.err);
    std::istringstream lines(periodic.out);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n)
        CHECK(Json::parse(line)["context"]["job_name"] == kReplaced);
    CHECK(n == 2);
}

TEST_CASE(
    "a Latin-1 job name and output directory: record writes its verdict; replay, report, html read it") {
    const std::string dir = make_temp_dir("utf8") + "/" + kLatin1Name;
    const auto rec = run_process(
        {STALLSCOPE_EXE, "record", "--out-dir", dir, "--interval-seconds", "0.05", "--count", "3"},
        job_env_named(kLatin1Name));
    REQUIRE_MESSAGE(rec.exit_code == 0, rec.err);
    CHECK(rec.err.find("internal error") == std::string::npos);
    const Json verdict = read_json_at(the_only_file(dir, "verdict.0."));
    CHECK(verdict["schema"] == "stallscope.verdict/1");
    CHECK(verdict["job_name"] == kReplaced);
    CHECK(verdict["timeline"].get<std::string>().find(kReplaced) != std::string::npos);

    const std::string timeline = the_only_file(dir, "timeline.0.");
    const auto replay = run_process({STALLSCOPE_EXE, "replay", "--json", timeline});
    REQUIRE_MESSAGE(replay.exit_code == 0, replay.err);
    const Json replayed = Json::parse(replay.out);
    CHECK(replayed["timeline"].get<std::string>().find(kReplaced) != std::string::npos);
    CHECK(replayed["matches_recorded"] == true);

    const auto report = run_process({STALLSCOPE_EXE, "report", "--json", dir});
    CHECK_MESSAGE(report.exit_code == 0, report.err);
    CHECK(Json::parse(report.out).is_object());

    const std::string page = make_temp_dir("utf8-html") + "/report.html";
    const auto html = run_process({STALLSCOPE_EXE, "html", dir, "-o", page});
    CHECK_MESSAGE(html.exit_code == 0, html.err);
    struct stat st {};
    CHECK(::stat(page.c_str(), &st) == 0);
}

TEST_CASE("a netdev name that is not UTF-8 (the kernel allows any byte but '/', ':' and spaces)") {
    // The vm fixture node with eth0 renamed "eth\xe90" in /proc/net/dev.
    const std::string node = make_temp_dir("utf8-node") + "/vm";
    REQUIRE(
        run_process({"/bin/cp", "-r", std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/vm", node}).exit_code ==
        0);
    const std::string net_dev = node + "/proc/net/dev";
    std::string text;
    {
        std::ifstream in(net_dev);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto at = text.find("  eth0:");
    REQUIRE(at != std::string::npos);
    text.replace(at, 7, std::string("  eth\xe9") + "0:");  // "\xe90" would be one escape
    std::ofstream(net_dev) << text;
    auto env = job_env_named("plain");
    for (auto& v : env)
        if (v.rfind("STALLSCOPE_PROCFS_ROOT=", 0) == 0) v = "STALLSCOPE_PROCFS_ROOT=" + node + "/proc";

    const auto once = run_process({STALLSCOPE_EXE, "--json"}, env);
    REQUIRE_MESSAGE(once.exit_code == 0, once.err);
    const Json sample = Json::parse(once.out);  // kept: a range-for over a temporary's member dangles
    const std::string replaced = std::string("eth\xef\xbf\xbd") + "0";
    bool seen = false;
    for (const auto& iface : sample["interfaces"]) seen = seen || iface["name"] == replaced;
    CHECK_MESSAGE(seen, once.out);

    const std::string dir = make_temp_dir("utf8-netdev");
    const auto rec = run_process(
        {STALLSCOPE_EXE, "record", "--out-dir", dir, "--interval-seconds", "0.05", "--count", "3"}, env);
    REQUIRE_MESSAGE(rec.exit_code == 0, rec.err);
    CHECK(read_json_at(the_only_file(dir, "verdict.0."))["schema"] == "stallscope.verdict/1");
    const auto replay = run_process({STALLSCOPE_EXE, "replay", "--json", the_only_file(dir, "timeline.0.")});
    CHECK_MESSAGE(replay.exit_code == 0, replay.err);
}
