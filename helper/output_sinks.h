// The optional per-sample outputs shared by the CLI and the helper: Prometheus textfile, Alertmanager.
#pragma once

#include <memory>
#include <string>

#include "helper/cli_args.h"
#include "libstallscope/model/profile.h"
#include "libstallscope/model/rates.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope::cli {

class OutputSinks {
  public:
    // Reads --prometheus-textfile and --alert-webhook-url from `args`.
    OutputSinks(const ParsedArgs& args, bool remove_textfile_at_exit);
    ~OutputSinks();
    // Never throws and never blocks on the network; problems are remembered for warnings().
    void publish(const Snapshot& snapshot, const Profile& profile, const Rates* rates);
    // Resolves active alerts (bounded wait) and removes the textfile if asked to.
    void close();
    const std::vector<std::string>& warnings() const { return warnings_; }

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::vector<std::string> warnings_;
};

}  // namespace stallscope::cli
