#include "libstallscope/util/counter_file.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace stallscope;

namespace {
std::string counter_temp_dir() {
    char tmpl[] = "/tmp/stallscope-cf-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return tmpl;
}
}  // namespace

TEST_CASE("a kept-open counter file sees each new value with pread") {
    const std::string dir = counter_temp_dir();
    const std::string path = dir + "/port_rcv_data";
    { std::ofstream(path) << "100\n"; }
    CounterFile file(path);
    std::string error;
    auto first = file.read(error);
    REQUIRE(first);
    CHECK(*first == "100\n");
    // sysfs rewrites the value in place; a regular file rewritten in place behaves the same for pread.
    { std::ofstream(path, std::ios::in | std::ios::out) << "200\n"; }
    auto second = file.read(error);
    REQUIRE(second);
    CHECK(*second == "200\n");
    std::remove(path.c_str());
    rmdir(dir.c_str());
}

TEST_CASE("a missing file reports why and can appear later") {
    const std::string dir = counter_temp_dir();
    CounterFile file(dir + "/absent");
    std::string error;
    CHECK_FALSE(file.read(error));
    CHECK(error == "No such file or directory");
    CHECK_FALSE(file.unsupported());
    { std::ofstream(dir + "/absent") << "7\n"; }
    CHECK(file.read(error));
    std::remove((dir + "/absent").c_str());
    rmdir(dir.c_str());
}

TEST_CASE("a directory where a counter should be is marked unsupported and not re-read") {
    const std::string dir = counter_temp_dir();
    CounterFile file(dir);
    std::string error;
    CHECK_FALSE(file.read(error));
    CHECK(file.unsupported());
    CHECK_FALSE(file.read(error));
    CHECK(error.find("not re-read") != std::string::npos);
    rmdir(dir.c_str());
}
