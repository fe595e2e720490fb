// The helper's output directory (helper/output_dir.cc, created as the job user): never through a
// planted symlink or into someone else's directory, never mkdir -p, and a clear stderr warning when it
// falls back (issue 17). Here because the plugin's output_dir= contract is what it protects.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "helper/output_dir.h"
#include "spank/state.h"

using stallscope::cli::choose_output_dir;
using stallscope::cli::OutputDir;

namespace {

struct OutDirTempDir {
    std::string path;
    OutDirTempDir() {
        char tmpl[] = "/tmp/stallscope-outdir-test.XXXXXX";
        path = mkdtemp(tmpl);
        chmod(path.c_str(), 0755);
    }
    ~OutDirTempDir() { stallscope::spank::remove_tree(path); }
};

// choose_output_dir with TMPDIR pointing into `tmp` (the fallback goes there), stderr captured.
OutputDir choose(const std::string& requested, const OutDirTempDir& tmp, std::string* stderr_text) {
    const char* old = std::getenv("TMPDIR");
    std::string saved = old ? old : "";
    setenv("TMPDIR", tmp.path.c_str(), 1);
    std::string err_file = tmp.path + "/stderr.txt";
    int saved_fd = dup(2);
    int fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    OutputDir out = choose_output_dir(requested);
    dup2(saved_fd, 2);
    close(saved_fd);
    if (old)
        setenv("TMPDIR", saved.c_str(), 1);
    else
        unsetenv("TMPDIR");
    std::ifstream in(err_file);
    std::stringstream ss;
    ss << in.rdbuf();
    *stderr_text = ss.str();
    return out;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("output dir: created 0755 when missing, used as is when it is ours; no warning") {
    OutDirTempDir submit, tmp;
    std::string err;
    OutputDir out = choose(submit.path + "/stallscope-7/", tmp, &err);
    CHECK(out.path == submit.path + "/stallscope-7");
    CHECK(out.warning.empty());
    CHECK(err.empty());
    struct stat st {};
    REQUIRE(lstat(out.path.c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK(choose(submit.path + "/stallscope-7", tmp, &err).path == submit.path + "/stallscope-7");
}

TEST_CASE("output dir: a planted symlink is not followed; the fallback is used and said on stderr") {
    OutDirTempDir submit, tmp, attacker;
    const std::string planted = submit.path + "/stallscope-8";
    REQUIRE(symlink(attacker.path.c_str(), planted.c_str()) == 0);
    std::string err;
    OutputDir out = choose(planted, tmp, &err);
    CHECK(out.path == tmp.path + "/stallscope-" + std::to_string(getuid()) + "/stallscope-8");
    CHECK(contains(out.warning, "symbolic link"));
    CHECK(contains(err, "symbolic link"));
    CHECK(access((attacker.path + "/.stallscope-write-probe." + std::to_string(getpid())).c_str(), F_OK) !=
          0);
}

TEST_CASE("output dir: a missing parent is not created (root included); a regular file is refused loudly") {
    OutDirTempDir tmp;
    std::string err;
    OutputDir out = choose("/nonexistent-stallscope-test/x", tmp, &err);
    CHECK(access("/nonexistent-stallscope-test", F_OK) != 0);
    CHECK(out.path == tmp.path + "/stallscope-" + std::to_string(getuid()) + "/x");
    CHECK(contains(err, "parent directory does not exist"));
    OutDirTempDir submit;
    const std::string file = submit.path + "/stallscope-9";
    std::ofstream(file) << "x";
    out = choose(file, tmp, &err);
    CHECK(contains(err, "exists and is not a directory"));
    CHECK(contains(out.warning, "exists and is not a directory"));
}

TEST_CASE("output dir: a directory writable by others, or owned by someone else, is refused") {
    OutDirTempDir submit, tmp;
    const std::string dir = submit.path + "/stallscope-10";
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    REQUIRE(chmod(dir.c_str(), 0777) == 0);
    std::string err;
    CHECK(contains(choose(dir, tmp, &err).warning, "writable by group or others"));
    if (geteuid() != 0) {
        MESSAGE("skipped the ownership part: needs root (chown)");
        return;
    }
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    REQUIRE(chown(dir.c_str(), 65534, 65534) == 0);  // planted by another user, a real directory
    OutputDir out = choose(dir, tmp, &err);
    CHECK(out.path != dir);
    CHECK(contains(out.warning, "owned by uid 65534"));
}
