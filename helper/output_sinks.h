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
    // Every problem so far (the helper's verdict lists them).
    const std::vector<std::string>& warnings() const { return warnings_; }
    // Problems not handed out yet: each failure once, then again only when its message changes.
    std::vector<std::string> take_new_warnings();

  private:
    struct Impl;
    void warn_on_change(std::string& last, const std::string& message);

    std::unique_ptr<Impl> impl_;
    std::vector<std::string> warnings_;
    std::size_t handed_out_ = 0;
};

}  // namespace stallscope::cli
