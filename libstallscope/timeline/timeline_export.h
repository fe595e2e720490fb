// `stallscope export TIMELINE`: any timeline (v1, v2, stdin) as stallscope.timeline/1 JSON lines, every
// sample whole, for tools that want one snapshot per line (jq, pandas). The output replays to the same
// verdict: it is the v1 format, sample lines without the per-sample summary.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "libstallscope/timeline/timeline.h"

namespace stallscope {

// Writes the lines to `out`. False + error when the input cannot be read or is not a timeline; reading
// problems go to `warnings`.
bool export_timeline(const std::string& path, std::FILE* out, std::vector<std::string>& warnings,
                     std::string& error);

}  // namespace stallscope
