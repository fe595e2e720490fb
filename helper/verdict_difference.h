// What differs between the verdict line a helper recorded and the verdict a replay computes from the same
// samples (`stallscope replay`): a bare "differs" gives the user nothing to act on.
#pragma once

#include <string>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::cli {

struct VerdictDifference {
    std::string recorded_label, replayed_label;
    double recorded_confidence = 0, replayed_confidence = 0;
    std::string recorded_version;              // the header's stallscope_version, "" when absent
    std::vector<std::string> reasons_added;    // code[@subject] in the replay only
    std::vector<std::string> reasons_removed;  // code[@subject] in the recording only
    std::vector<std::string> fields_new;       // fields the recording lacks (written by later versions)
    std::vector<std::string> fields_changed;   // other top-level fields whose values differ
    std::string thresholds;                    // "rules": --rules; "recorded": the header's; "defaults"
};

// `recorded`: the timeline's verdict line; `replayed`: to_json() of the replay's verdict.
VerdictDifference verdict_difference(const Json& recorded, const Json& replayed, const Json& header,
                                     bool rules_given);

// Indented lines for the text output, each naming what differs and the likely cause.
std::string verdict_difference_text(const VerdictDifference& d);
Json verdict_difference_json(const VerdictDifference& d);

}  // namespace stallscope::cli
