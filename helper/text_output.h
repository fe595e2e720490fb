// Human-readable rendering of a profile or a step verdict (the non---json output).
#pragma once

#include <string>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope::cli {

std::string profile_text(const Snapshot& snapshot, const Profile& profile);
std::string verdict_text(const StepVerdict& verdict);
std::string evidence_text(const Evidence& evidence);

}  // namespace stallscope::cli
