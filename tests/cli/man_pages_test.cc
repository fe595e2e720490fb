// The man pages cannot drift from the program (audit 2026-11-27 findings 18, 19): every option that a
// `--help` lists, every subcommand and every environment variable of `stallscope --help` is in
// doc/man/stallscope.1, and every key the plugin's plugstack.conf parser accepts is in
// doc/man/stallscope.so.8.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>

#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using stallscope::test::run_process;
using stallscope::test::slurp;

namespace {

// The page as a reader sees the words: troff's \- is a '-', font changes (\fB, \fR, \fI) are nothing.
std::string man_text(const std::string& name) {
    std::string page = slurp(std::string(STALLSCOPE_SOURCE_DIR) + "/doc/man/" + name);
    page = std::regex_replace(page, std::regex(R"(\\-)"), "-");
    page = std::regex_replace(page, std::regex(R"(\\f[BIRP])"), "");
    return page;
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
    std::set<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator();
         ++it)
        out.insert((*it)[1].str());
    return out;
}

// Every `stallscope WORD` of the top-level --help's usage lines, so a new subcommand cannot be left out.
std::set<std::string> subcommands(const std::string& top_help) {
    return matches(top_help, std::regex(R"((?:^|\n)  stallscope ([a-z][a-z-]*[a-z]))"));
}

}  // namespace

TEST_CASE("stallscope.1 names every subcommand, every option of every --help, every environment variable") {
    const std::string page = man_text("stallscope.1");
    const std::regex option(R"((?:^|[\s\[|,(])(--[a-z][a-z0-9-]*[a-z0-9]|-o)(?=[\s\]=|,)]|$))");
    std::vector<std::pair<std::string, std::string>> helps;  // (command, --help text)
    const auto top = run_process({STALLSCOPE_EXE, "--help"});
    REQUIRE(top.exit_code == 0);
    helps.emplace_back("stallscope", top.out);
    const std::set<std::string> commands = subcommands(top.out);
    for (const char* known : {"record", "replay", "export", "report", "summarize", "jobs", "html", "compare"})
        CHECK_MESSAGE(commands.count(known) == 1, "stallscope --help lacks " << known);
    for (const std::string& command : commands) {
        const auto r = run_process({STALLSCOPE_EXE, command, "--help"});
        REQUIRE_MESSAGE(r.exit_code == 0, command);
        helps.emplace_back(command, r.out);
        CHECK_MESSAGE(page.find(".B stallscope " + command) != std::string::npos,
                      "SYNOPSIS lacks " << command);
    }
    for (const auto& entry : helps)  // not a structured binding: clang before 16 cannot capture one
        for (const auto& o : matches(entry.second, option))
            CHECK_MESSAGE(page.find(o) != std::string::npos,
                          entry.first << " --help lists " << o << ", the page does not");
    for (const auto& variable :
         matches(top.out, std::regex(R"(\b((?:STALLSCOPE|NCCL|MONITORING)_[A-Z0-9_]+))")))
        CHECK_MESSAGE(page.find(variable) != std::string::npos, "ENVIRONMENT lacks " << variable);
}

TEST_CASE("stallscope.so.8 names every plugstack.conf key the plugin accepts") {
    const std::string page = man_text("stallscope.so.8");
    const std::string parser = slurp(std::string(STALLSCOPE_SOURCE_DIR) + "/spank/config.cc");
    // The keys as the parser spells them: its table of numbers and its `key == "..."` branches.
    std::set<std::string> keys = matches(parser, std::regex(R"re(\{"([a-z_]+)", &PluginConfig::)re"));
    for (const auto& k : matches(parser, std::regex(R"re(key == "([a-z_]+)")re"))) keys.insert(k);
    REQUIRE(keys.size() >= 15);
    for (const auto& key : keys)
        CHECK_MESSAGE(page.find(key + "=") != std::string::npos, "the page lacks " << key << "=");
}
