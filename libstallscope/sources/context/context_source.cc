// The context source: which job (Slurm) or pod (Kubernetes) this sample belongs to.
//
// Our own environment is read once (it cannot change). When it names no Slurm job, a bounded scan of
// <procfs>/*/environ of processes with our uid finds the job running on the node (the seed tool did this
// to attribute a node-level run); the scan runs on the first sample and then once per
// ContextOptions::proc_scan_every samples but at most every proc_scan_min_seconds, and stops at the first
// SLURM_JOB_ID (newest process first).
#include "libstallscope/sources/context/context_source.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "libstallscope/sources/factories.h"
#include "libstallscope/util/counter_file.h"
#include "libstallscope/util/parse_number.h"

extern char** environ;

namespace stallscope {
namespace {

constexpr std::size_t kMaxDirEntries = 65536;  // bounds the scan on a node with very many processes

class ContextSource final : public Source {
  public:
    ContextSource(const Roots& roots, ContextOptions options)
        : procfs_(roots.procfs), real_proc_(roots.procfs == "/proc"), options_(std::move(options)) {
        own_ = slurm_context_from_environment(options_.environment);
        read_kubernetes();
    }

    std::string_view name() const override { return "context"; }

    void sample(Snapshot& snapshot) override {
        for (auto& w : pending_warnings_) snapshot.warnings.push_back(std::move(w));
        pending_warnings_.clear();
        if (own_.scheduler == "slurm") {
            snapshot.context = own_;
            return;
        }
        if (samples_since_scan_ < 0 ||
            (++samples_since_scan_ >= options_.proc_scan_every && scan_time_due())) {
            samples_since_scan_ = 0;
            scanned_ = scan_processes();
            scanned_at_ = std::chrono::steady_clock::now();
        }
        snapshot.context = scanned_ ? *scanned_ : own_;
    }

  private:
    bool scan_time_due() const {
        return std::chrono::steady_clock::now() - scanned_at_ >=
               std::chrono::duration<double>(options_.proc_scan_min_seconds);
    }

    void read_kubernetes() {
        if (options_.kubernetes_namespace_file.empty()) return;
        std::string error;
        struct stat st;
        if (::stat(options_.kubernetes_namespace_file.c_str(), &st) != 0) return;  // not in a pod
        auto text = read_text_file(options_.kubernetes_namespace_file, error, 4096);
        if (!text) {
            pending_warnings_.push_back(options_.kubernetes_namespace_file + ": unreadable: " + error);
            return;
        }
        own_.namespace_name = std::string(trim(*text));
        if (own_.namespace_name.empty()) {
            if (auto it = options_.environment.find("POD_NAMESPACE"); it != options_.environment.end())
                own_.namespace_name = it->second;
        }
        // The downward API's POD_NAME when the pod spec sets it; else the pod's hostname, which
        // Kubernetes sets to the pod name.
        for (const char* var : {"POD_NAME", "HOSTNAME"}) {
            if (auto it = options_.environment.find(var);
                it != options_.environment.end() && !it->second.empty()) {
                own_.pod = it->second;
                break;
            }
        }
        if (own_.pod.empty()) own_.pod = options_.hostname;
        if (own_.scheduler == "none") own_.scheduler = "kubernetes";
    }

    // The context of the newest process of our uid whose environment names a Slurm job, or nullopt.
    // Newest first (highest pid): the job's processes are younger than the user's other sessions.
    std::optional<JobContext> scan_processes() {
        DIR* dir = ::opendir(procfs_.c_str());
        if (!dir) return std::nullopt;
        std::vector<std::uint64_t> pids;
        std::size_t entries = 0;
        while (const dirent* entry = ::readdir(dir)) {
            if (++entries > kMaxDirEntries) break;
            if (auto pid = parse_u64(entry->d_name)) pids.push_back(*pid);
        }
        ::closedir(dir);
        std::sort(pids.begin(), pids.end(), std::greater<>());
        const uid_t uid = ::geteuid();
        const auto self = static_cast<std::uint64_t>(::getpid());
        std::size_t examined = 0;
        std::string path, error;
        for (const auto pid : pids) {
            if (examined >= options_.proc_scan_max_processes) break;
            if (real_proc_ && pid == self) continue;
            path.assign(procfs_).append("/").append(std::to_string(pid));
            struct stat st;
            if (::stat(path.c_str(), &st) != 0 || st.st_uid != uid) continue;
            ++examined;
            // Processes come and go, and other users' environ is unreadable by design: no warnings.
            auto text = read_text_file(path + "/environ", error, 256 * 1024);
            if (!text) continue;
            JobContext ctx = slurm_context_from_environment(parse_environ(*text));
            if (ctx.scheduler != "slurm") continue;
            ctx.pod = own_.pod;
            ctx.namespace_name = own_.namespace_name;
            if (ctx.visible_devices.empty()) ctx.visible_devices = own_.visible_devices;
            return ctx;
        }
        return std::nullopt;
    }

    std::string procfs_;
    bool real_proc_;
    ContextOptions options_;
    JobContext own_;
    std::optional<JobContext> scanned_;
    int samples_since_scan_ = -1;  // -1: never scanned
    std::chrono::steady_clock::time_point scanned_at_;
    std::vector<std::string> pending_warnings_;
};

std::string parent_dir(const std::string& path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const auto slash = p.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : p.substr(0, slash);
}

}  // namespace

ContextOptions context_options_for(const Roots& roots) {
    ContextOptions options;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view entry = *e;
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        if (is_context_variable(entry.substr(0, eq)))
            options.environment.insert_or_assign(std::string(entry.substr(0, eq)),
                                                 std::string(entry.substr(eq + 1)));
    }
    options.kubernetes_namespace_file = roots.fixture_mode()
                                            ? parent_dir(roots.procfs) + kKubernetesNamespaceFile
                                            : std::string(kKubernetesNamespaceFile);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) options.hostname = host;
    return options;
}

std::unique_ptr<Source> make_context_source(const Roots& roots, ContextOptions options) {
    return std::make_unique<ContextSource>(roots, std::move(options));
}

std::unique_ptr<Source> make_context_source(const Roots& roots) {
    return make_context_source(roots, context_options_for(roots));
}

}  // namespace stallscope
