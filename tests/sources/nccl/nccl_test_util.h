// Shared helpers of tests/sources/nccl.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace stallscope::test {

inline std::string nccl_fixture_path(const std::string& name) {
    return std::string(STALLSCOPE_FIXTURES_DIR) + "/nccl/" + name;
}

inline std::string nccl_fixture(const std::string& name) {
    std::ifstream f(nccl_fixture_path(name), std::ios::binary);
    REQUIRE(f);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace stallscope::test
