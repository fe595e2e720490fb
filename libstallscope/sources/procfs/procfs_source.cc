// The procfs source: host stats and every /proc/net/dev row, read through kept-open fds.
#include <string>

#include "libstallscope/sources/factories.h"
#include "libstallscope/sources/procfs/kept_open_file.h"
#include "libstallscope/sources/procfs/procfs_parsers.h"

namespace stallscope {
namespace {

class ProcfsSource final : public Source {
  public:
    explicit ProcfsSource(const Roots& roots)
        : loadavg_(roots.procfs + "/loadavg"),
          meminfo_(roots.procfs + "/meminfo"),
          stat_(roots.procfs + "/stat"),
          vmstat_(roots.procfs + "/vmstat"),
          pressure_cpu_(roots.procfs + "/pressure/cpu"),
          pressure_io_(roots.procfs + "/pressure/io"),
          pressure_memory_(roots.procfs + "/pressure/memory"),
          net_dev_(roots.procfs + "/net/dev") {}

    std::string_view name() const override { return "procfs"; }

    void sample(Snapshot& snapshot) override {
        HostStats& host = snapshot.host_stats;
        Warnings& warnings = snapshot.warnings;
        if (auto text = read(loadavg_, warnings)) parse_loadavg(*text, loadavg_.path(), host, warnings);
        if (auto text = read(meminfo_, warnings)) parse_meminfo(*text, meminfo_.path(), host, warnings);
        if (auto text = read(stat_, warnings)) parse_stat(*text, stat_.path(), host, warnings);
        if (auto text = read(vmstat_, warnings)) parse_vmstat(*text, vmstat_.path(), host, warnings);
        if (auto text = read(pressure_cpu_, warnings))
            parse_pressure(*text, pressure_cpu_.path(), PsiResource::cpu, host.psi, warnings);
        if (auto text = read(pressure_io_, warnings))
            parse_pressure(*text, pressure_io_.path(), PsiResource::io, host.psi, warnings);
        if (auto text = read(pressure_memory_, warnings))
            parse_pressure(*text, pressure_memory_.path(), PsiResource::memory, host.psi, warnings);
        if (auto text = read(net_dev_, warnings)) {
            snapshot.interfaces.reserve(snapshot.interfaces.size() + last_interface_count_);
            const auto before = snapshot.interfaces.size();
            parse_net_dev(*text, net_dev_.path(), snapshot.interfaces, warnings);
            last_interface_count_ = snapshot.interfaces.size() - before;
        }
    }

  private:
    // A missing or unreadable file is one warning naming it; its fields stay null. PSI files are missing
    // on kernels without CONFIG_PSI (or booted with psi=0), which the warning says.
    std::optional<std::string_view> read(KeptOpenFile& file, Warnings& warnings) {
        auto text = file.read(error_);
        if (!text) {
            std::string why = "unreadable: " + error_;
            if (file.path().find("/pressure/") != std::string::npos) why += " (kernel without PSI?)";
            warnings.push_back(field_warning(file.path(), "file", why));
        }
        return text;
    }

    KeptOpenFile loadavg_, meminfo_, stat_, vmstat_;
    KeptOpenFile pressure_cpu_, pressure_io_, pressure_memory_;
    KeptOpenFile net_dev_;
    std::size_t last_interface_count_ = 0;
    std::string error_;
};

}  // namespace

std::unique_ptr<Source> make_procfs_source(const Roots& roots) {
    return std::make_unique<ProcfsSource>(roots);
}

}  // namespace stallscope
