// write_job_comment against a fake Slurm (a root-owned script standing in for scontrol and the job reader):
// the review's M1 attack, a JobName with "\n\n" renamed between two `scontrol show job` reads, cannot change
// or remove any byte of the AdminComment outside our segment. The fake serves the text forms the old writer
// read (with the rename applied between the two calls) and the JSON record the new one reads, and records
// the `scontrol update` argv, so the same test ran against both.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "spank/comment_writer.h"
#include "spank/config.h"
#include "spank/process.h"
#include "spank/state.h"

using namespace stallscope::spank;

namespace {

const std::string kForeign = "JS1:abc def Foo=bar";
const std::string kRealComment =
    kForeign + "; stallscope/1 SLOW conf=0.80 top=x gpus=8 dur=10 file=/a b/v.json";
const std::string kSegment = "stallscope/1 FAST conf=0.90 gpus=1 dur=10 node=vm";

std::string slurp_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::string with_name(std::string text, const std::string& name) {
    const std::string from = "JobName=train";
    return text.replace(text.find(from), from.size(), "JobName=" + name);
}

// A fake Slurm in a root-owned 0755 directory under /tmp (sticky: check_root_owned_program accepts it).
struct FakeSlurm {
    std::string dir;
    PluginConfig config = default_config();
    FakeSlurm(const std::string& name_first_read, const std::string& name_second_read) {
        char tmpl[] = "/tmp/stallscope-fake-slurm.XXXXXX";
        dir = mkdtemp(tmpl);
        chmod(dir.c_str(), 0755);
        const std::string fixtures = std::string(STALLSCOPE_TESTS_DIR) + "/spank/fixtures/";
        // 22.05's text forms of job 13 (captured), the user renaming the job between the two calls.
        spit(dir + "/multi.txt",
             with_name(slurp_file(fixtures + "scontrol_show_job_admincomment.txt"), name_first_read));
        spit(dir + "/one.txt", with_name(slurp_file(fixtures + "scontrol_show_job_admincomment.oneline.txt"),
                                         name_second_read));
        // The job record the reader prints, with whatever name the job has now.
        const nlohmann::json record = {
            {"jobs", {{{"job_id", 13}, {"name", name_second_read}, {"admin_comment", kRealComment}}}},
            {"errors", nlohmann::json::array()}};
        spit(dir + "/record.json", record.dump() + "\n");
        const std::string script =
            "#!/bin/sh\n"
            "d=$(dirname \"$0\")\n"
            "case \"$*\" in\n"
            "  ping) echo 'Slurmctld(primary) at fake is UP' ;;\n"
            "  'show job 13') cat \"$d/multi.txt\" ;;\n"
            "  'show job -o 13') cat \"$d/one.txt\" ;;\n"
            "  '--json show job 13') cat \"$d/record.json\"; echo 'a warning on stderr' >&2 ;;\n"
            "  update*) printf '%s\\0' \"$@\" >\"$d/update.args\" ;;\n"
            "  *) echo \"unexpected: $*\" >&2; exit 1 ;;\n"
            "esac\n";
        for (const char* name : {"/scontrol", "/reader"}) {
            spit(dir + name, script);
            chmod((dir + name).c_str(), 0755);
        }
        config.scontrol = dir + "/scontrol";
        config.job_reader = dir + "/reader";  // a reader takes scontrol's `--json show job <id>` argv
        config.scontrol_timeout = 5;
    }
    ~FakeSlurm() { remove_tree(dir); }
    // The AdminComment= argument of the `scontrol update` that was run, or "<no update>".
    std::string written() const {
        const std::string args = slurp_file(dir + "/update.args");
        const std::string key = std::string(1, '\0') + "AdminComment=";
        const auto at = args.find(key);
        if (at == std::string::npos) return "<no update>";
        const auto end = args.find('\0', at + key.size());
        return args.substr(at + key.size(), end - at - key.size());
    }
};

}  // namespace

TEST_CASE("M1: a JobName with \\n\\n renamed between reads cannot forge or remove AdminComment content") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (the fake scontrol must be root-owned, as the plugin checks)");
        return;
    }
    struct Case {
        const char* what;
        std::string first, second;
    };
    // The review's names: delete (A, B) and forge (A, B); the same name in both reads; no rename.
    const std::vector<Case> cases = {
        {"baseline", "train", "train"},
        {"race, delete", "x\n   WorkDir=/f\n\nz", "x"},
        {"race, forge", "x\n   WorkDir=/f\n   AdminComment=JS1:FORGED_BY_USER\n\nz",
         "x WorkDir=/f AdminComment=JS1:FORGED_BY_USER z"},
        {"one name with \\n\\n", "x\n   WorkDir=/f\n\nz", "x\n   WorkDir=/f\n\nz"},
        {"a fake earlier segment",
         "x\n   WorkDir=/f\n   AdminComment=x stallscope/1 FAST conf=1.00 top=none\n\nz",
         "x WorkDir=/f AdminComment=x stallscope/1 FAST conf=1.00 top=none z"},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        FakeSlurm slurm(c.first, c.second);
        const std::string err = write_job_comment(slurm.config, "13", kSegment);
        CHECK(err == "");
        // Every byte outside our segment as it was: the jobstats segment kept, ours replaced.
        CHECK(slurm.written() == kForeign + "; " + kSegment);
    }
}

TEST_CASE("comment write: a reader that fails or prints something else leaves AdminComment alone") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root (the fake scontrol must be root-owned, as the plugin checks)");
        return;
    }
    FakeSlurm slurm("train", "train");
    SUBCASE("the record of another job") {
        spit(slurm.dir + "/record.json", R"({"jobs":[{"job_id":14,"admin_comment":""}]})");
        CHECK(write_job_comment(slurm.config, "13", kSegment).find("no record of job 13") !=
              std::string::npos);
    }
    SUBCASE("not JSON (the text form)") {
        spit(slurm.dir + "/record.json", slurp_file(slurm.dir + "/multi.txt"));
        CHECK(write_job_comment(slurm.config, "13", kSegment).find("not JSON") != std::string::npos);
    }
    SUBCASE("an unknown key for the comment") {
        spit(slurm.dir + "/record.json", R"({"jobs":[{"job_id":13,"AdminComment":"JS1:x"}]})");
        CHECK(write_job_comment(slurm.config, "13", kSegment).find("no admin_comment") != std::string::npos);
    }
    SUBCASE("a reader that is not root-owned") {
        chown(slurm.config.job_reader.c_str(), 65534, 65534);
        CHECK(write_job_comment(slurm.config, "13", kSegment).find("not running the job reader") !=
              std::string::npos);
    }
    CHECK(slurm.written() == "<no update>");
}
