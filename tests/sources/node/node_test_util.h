// Helpers shared by the node-source tests: fixture roots, temp copies of fixture trees, warning counts.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "libstallscope/model/snapshot.h"
#include "libstallscope/sources/source.h"
#include "libstallscope/util/roots.h"

namespace node_test {

inline std::string node_dir(const std::string& node) {
    return std::string(STALLSCOPE_FIXTURES_DIR) + "/nodes/" + node;
}

// Roots of a fixture node: <node>/proc, <node>/sys, and <node>/ethtool when the node has one.
inline stallscope::Roots fixture_roots(const std::string& node) {
    stallscope::Roots roots;
    roots.procfs = node_dir(node) + "/proc";
    roots.sysfs = node_dir(node) + "/sys";
    roots.dev = node_dir(node) + "/dev";
    if (std::filesystem::is_directory(node_dir(node) + "/ethtool"))
        roots.ethtool = node_dir(node) + "/ethtool";
    return roots;
}

// A fresh directory under /tmp, removed when the object goes out of scope.
class TempDir {
  public:
    TempDir() {
        char tmpl[] = "/tmp/stallscope-node-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// Copies a fixture node into `dir` (symlinks stay symlinks, dangling ones included) and returns roots
// pointing at the copy.
inline stallscope::Roots copy_node(const std::string& node, const TempDir& dir) {
    namespace fs = std::filesystem;
    fs::copy(node_dir(node), dir.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    stallscope::Roots roots;
    roots.procfs = dir.path() + "/proc";
    roots.sysfs = dir.path() + "/sys";
    if (fs::is_directory(dir.path() + "/ethtool")) roots.ethtool = dir.path() + "/ethtool";
    return roots;
}

inline void write_file(const std::string& path, std::string_view text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Warnings containing every one of `parts`.
inline int count_warnings(const stallscope::Snapshot& snap, std::initializer_list<std::string_view> parts) {
    return static_cast<int>(
        std::count_if(snap.warnings.begin(), snap.warnings.end(), [&](const std::string& w) {
            for (auto p : parts)
                if (w.find(p) == std::string::npos) return false;
            return true;
        }));
}

inline std::string all_warnings(const stallscope::Snapshot& snap) {
    std::string out;
    for (const auto& w : snap.warnings) out += w + "\n";
    return out;
}

inline stallscope::Snapshot sample(stallscope::Source& source) {
    stallscope::Snapshot snap;
    source.sample(snap);
    return snap;
}

}  // namespace node_test
