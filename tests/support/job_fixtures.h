// What several CLI test files share: the committed job directories and whole-file reads. One definition
// here rather than a private copy per file: the CI's sanitizer build compiles each test executable as a
// unity build (tests/run-all.sh), where two files' same-named private helpers collide.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace stallscope::test {

// fixtures/timelines/job-4242: one step on 8 nodes, FAIL_RISK (a RoCE port); job-4343: 8 nodes, 2 steps.
inline const std::string kJob4242 = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4242";
inline const std::string kJob4343 = std::string(STALLSCOPE_FIXTURES_DIR) + "/timelines/job-4343";

// A stand-in for sacct that answers from committed records (the CLI's --sacct, or a PATH entry).
inline const std::string kFakeSacct = std::string(STALLSCOPE_TESTS_DIR) + "/cli/fake_sacct.py";

// The file's bytes; "" when it cannot be read (the caller's CHECKs then fail on the content).
inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace stallscope::test
