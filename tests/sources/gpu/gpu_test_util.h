// Small helpers shared by the GPU source tests: fixture paths, scoped environment, temp directories.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gpu_test {

inline std::string fixture(const std::string& relative) {
    return std::string(STALLSCOPE_FIXTURES_DIR) + "/" + relative;
}

inline std::string fake_nvidia_smi() {
    return std::string(STALLSCOPE_TESTS_DIR) + "/sources/gpu/fake-nvidia-smi";
}

// Sets (or unsets, for nullopt) an environment variable for the scope; restores the old value.
class ScopedEnv {
  public:
    ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
        if (const char* old = ::getenv(name_.c_str())) old_ = old;
        if (value)
            ::setenv(name_.c_str(), value->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_.c_str(), old_->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    std::string name_;
    std::optional<std::string> old_;
};

class TempDir {
  public:
    TempDir() {
        std::string templ = (std::filesystem::temp_directory_path() / "stallscope-gpu-XXXXXX").string();
        if (::mkdtemp(templ.data())) path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& text, bool append = false) {
    std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out << text;
}

inline bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
    for (const auto& line : lines)
        if (line.find(needle) != std::string::npos) return true;
    return false;
}

inline int count_containing(const std::vector<std::string>& lines, const std::string& needle) {
    int n = 0;
    for (const auto& line : lines) n += line.find(needle) != std::string::npos;
    return n;
}

}  // namespace gpu_test
