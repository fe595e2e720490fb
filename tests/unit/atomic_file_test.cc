// write_file_atomically (issue 36, L7 and L8's file half): by descriptor, O_EXCL temp file, the
// process umask honoured except for the Prometheus textfile.
#include "libstallscope/util/atomic_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stallscope;

namespace {

std::string atomic_temp_dir() {
    char name[] = "/tmp/stallscope-atomic-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    return name;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

struct Umask {
    mode_t old;
    explicit Umask(mode_t m) : old(::umask(m)) {}
    ~Umask() { ::umask(old); }
};

}  // namespace

TEST_CASE("the file mode follows the umask; the Prometheus textfile stays 0644") {
    const std::string dir = atomic_temp_dir();
    std::string error;
    {
        Umask u(077);
        REQUIRE_MESSAGE(write_file_atomically(dir + "/verdict.json", "{}", true, error), error);
        CHECK(mode_of(dir + "/verdict.json") == 0600);
        REQUIRE_MESSAGE(
            write_file_atomically(dir + "/x.prom", "m 1\n", false, error, FileMode::world_readable), error);
        CHECK(mode_of(dir + "/x.prom") == 0644);
    }
    {
        Umask u(022);
        REQUIRE_MESSAGE(write_file_atomically(dir + "/summary.json", "{}", true, error), error);
        CHECK(mode_of(dir + "/summary.json") == 0644);
    }
}

TEST_CASE("a pre-created temp name is never opened: the directory's owner cannot hand us their file") {
    const std::string dir = atomic_temp_dir();
    const std::string target = dir + "/report.html";
    const std::string planted = atomic_temp_path(target);
    { std::ofstream(planted) << "planted"; }
    struct stat before {};
    REQUIRE(::stat(planted.c_str(), &before) == 0);
    std::string error;
    CHECK_FALSE(write_file_atomically(target, "<html>", false, error));
    CHECK(error.find(planted) != std::string::npos);
    CHECK(slurp(planted) == "planted");  // neither truncated, written nor renamed into place
    CHECK(!std::filesystem::exists(target));
    struct stat after {};
    REQUIRE(::stat(planted.c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    // A symlink at the temp name is not followed either.
    ::unlink(planted.c_str());
    REQUIRE(::symlink((dir + "/elsewhere").c_str(), planted.c_str()) == 0);
    CHECK_FALSE(write_file_atomically(target, "again", false, error));
    CHECK(!std::filesystem::exists(dir + "/elsewhere"));
    // Once the name is free, the write goes through.
    ::unlink(planted.c_str());
    REQUIRE_MESSAGE(write_file_atomically(target, "<html>", false, error), error);
    CHECK(slurp(target) == "<html>");
}

TEST_CASE("a directory component that is someone else's symlink is not followed; our own and root's are") {
    const std::string dir = atomic_temp_dir();
    std::filesystem::create_directory(dir + "/real");
    REQUIRE(::symlink((dir + "/real").c_str(), (dir + "/mine").c_str()) == 0);
    std::string error;
    REQUIRE_MESSAGE(write_file_atomically(dir + "/mine/a.txt", "a", false, error), error);
    CHECK(slurp(dir + "/real/a.txt") == "a");
    if (::geteuid() != 0) return;  // making a link owned by someone else needs root
    REQUIRE(::symlink((dir + "/real").c_str(), (dir + "/theirs").c_str()) == 0);
    REQUIRE(::lchown((dir + "/theirs").c_str(), 65534, 65534) == 0);
    CHECK(!write_file_atomically(dir + "/theirs/b.txt", "b", false, error));
    CHECK(error.find("symbolic link owned by another user") != std::string::npos);
    CHECK(!std::filesystem::exists(dir + "/real/b.txt"));
    // Deeper down too: every component is checked, not only the last.
    std::filesystem::create_directory(dir + "/real/sub");
    CHECK(!write_file_atomically(dir + "/theirs/sub/c.txt", "c", false, error));
    CHECK(!std::filesystem::exists(dir + "/real/sub/c.txt"));
}

TEST_CASE("write_file_atomically: a relative path, a failure names the path, no temp file is left") {
    const std::string dir = atomic_temp_dir();
    std::string error;
    CHECK(!write_file_atomically(dir + "/missing/x", "x", false, error));
    CHECK(error.find(dir + "/missing") != std::string::npos);
    CHECK(!write_file_atomically(dir + "/", "x", false, error));
    std::filesystem::create_directory(dir + "/d");
    CHECK(!write_file_atomically(dir + "/d", "x", false, error));  // rename over a directory fails
    for (const auto& e : std::filesystem::directory_iterator(dir))
        CHECK_MESSAGE(e.path().filename().string().find(".tmp") == std::string::npos, e.path());
}
