#include <doctest/doctest.h>

#include "spank/config.h"
#include "spank/option.h"

using namespace stallscope::spank;

TEST_CASE("--stallscope without a value uses default_interval") {
    PluginConfig c = default_config();
    CHECK(parse_interval(nullptr, c, "--stallscope").seconds == 30u);
    CHECK(parse_interval("", c, "--stallscope").seconds == 30u);
}

TEST_CASE("--stallscope accepts whole seconds inside min..max") {
    PluginConfig c = default_config();
    CHECK(parse_interval("1", c, "--stallscope").seconds == 1u);
    CHECK(parse_interval("3600", c, "--stallscope").seconds == 3600u);
}

TEST_CASE("--stallscope rejects garbage with one line naming the value and the range") {
    PluginConfig c = default_config();
    for (const char* bad : {"abc", "1.5", "5s", " 5", "+5", "0x10", "1e3", "99999999999999999999"}) {
        IntervalChoice r = parse_interval(bad, c, "--stallscope");
        CHECK_FALSE(r.seconds.has_value());
        CHECK(r.error.find("--stallscope=") == 0);
        CHECK(r.error.find('\n') == std::string::npos);
    }
    CHECK(parse_interval("-5", c, "--stallscope").error.find("must be positive") != std::string::npos);
    CHECK(parse_interval("0", c, "--stallscope").error ==
          "--stallscope=0: sampling interval must be between 1 and 3600 seconds");
    CHECK(parse_interval("3601", c, "STALLSCOPE").error.find("STALLSCOPE=3601: ") == 0);
}

TEST_CASE("control characters in a bad value are not echoed to the terminal") {
    IntervalChoice r = parse_interval("1\x1b[2J", default_config(), "--stallscope");
    CHECK(r.error.find('\x1b') == std::string::npos);
}

TEST_CASE("plugstack defaults") {
    ConfigParse p = parse_plugin_args({});
    CHECK(p.errors.empty());
    CHECK(p.config.helper == "/usr/bin/stallscope");
    CHECK(p.config.default_interval == 30);
    CHECK(p.config.stop_timeout == 10);
    CHECK(p.config.run_dir == "/run/stallscope");
    CHECK(p.config.comment == CommentTarget::admin);
    CHECK(p.config.output_policy == OutputPolicy::submit);
    CHECK_FALSE(p.config.always_on);
}

TEST_CASE("plugstack accepts every documented key") {
    ConfigParse p = parse_plugin_args({"helper=/opt/ss/bin/stallscope", "default_interval=15",
                                       "stop_timeout=3", "output_dir=/scratch/%u/ss", "comment=user",
                                       "always_on=1", "min_interval=5", "max_interval=60",
                                       "run_dir=/var/run/ss", "epilog_timeout=12", "scontrol_timeout=4"});
    CHECK(p.errors.empty());
    CHECK(p.config.helper == "/opt/ss/bin/stallscope");
    CHECK(p.config.default_interval == 15);
    CHECK(p.config.stop_timeout == 3);
    CHECK(p.config.output_policy == OutputPolicy::template_);
    CHECK(p.config.output_template == "/scratch/%u/ss");
    CHECK(p.config.comment == CommentTarget::user);
    CHECK(p.config.always_on);
    CHECK(p.config.min_interval == 5);
    CHECK(p.config.max_interval == 60);
    CHECK(p.config.run_dir == "/var/run/ss");
    CHECK(p.config.epilog_timeout == 12);
    CHECK(p.config.scontrol_timeout == 4);
    CHECK(parse_plugin_args({"output_dir=cwd"}).config.output_policy == OutputPolicy::cwd);
    CHECK(parse_plugin_args({"comment=none"}).config.comment == CommentTarget::none);
}

TEST_CASE("plugstack: an unknown key is an error naming it, the rest still applies") {
    ConfigParse p = parse_plugin_args({"helpr=/x", "stop_timeout=2"});
    REQUIRE(p.errors.size() == 1);
    CHECK(p.errors[0].find("unknown key 'helpr'") != std::string::npos);
    CHECK(p.config.stop_timeout == 2);
}

TEST_CASE("plugstack: malformed values keep the default and are reported") {
    ConfigParse p = parse_plugin_args({"default_interval=fast", "helper=stallscope", "comment=both",
                                       "always_on=yes", "run_dir=/", "output_dir=relative/dir",
                                       "stop_timeout=-1", "novalue", "=x", "timeline_format=3"});
    CHECK(p.errors.size() == 10);
    CHECK(p.config.timeline_format == 2);
    CHECK(p.config.default_interval == 30);
    CHECK(p.config.helper == "/usr/bin/stallscope");
    CHECK(p.config.comment == CommentTarget::admin);
    CHECK(p.config.run_dir == "/run/stallscope");
}

TEST_CASE("plugstack: inconsistent ranges fall back instead of rejecting every job") {
    ConfigParse p = parse_plugin_args({"min_interval=100", "max_interval=10"});
    CHECK(p.errors.size() == 1);
    CHECK(p.config.min_interval == 1);
    CHECK(p.config.max_interval == 3600);
    ConfigParse q = parse_plugin_args({"min_interval=60"});  // default_interval 30 is below it
    CHECK(q.errors.size() == 1);
    CHECK(q.config.default_interval == 60);
}
