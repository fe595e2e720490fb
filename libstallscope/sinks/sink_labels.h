// Labels shared by the Prometheus textfile and Alertmanager sinks, and the one place that decides which
// profile reasons are alerts and what they are called.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libstallscope/model/profile.h"
#include "libstallscope/model/snapshot.h"

namespace stallscope {

// Ordered name -> value pairs. Names must match [a-zA-Z_][a-zA-Z0-9_]* (checked by valid_label_name).
using Labels = std::vector<std::pair<std::string, std::string>>;

// Prometheus label name rule (the `__` prefix is reserved for Prometheus itself).
bool valid_label_name(std::string_view name);

// Static labels (operator-given, e.g. cluster="a100-east"; invalid names are dropped) followed by what the
// snapshot knows: host, scheduler, job_id, step_id -- each only when non-empty and not already given
// statically. This is the label set every stallscope alert carries. Textfile series take it without
// job_id and step_id (with_job false): a label whose value changes with every job multiplies every
// series by the number of jobs a node runs; the textfile names the job in one stallscope_job_info.
Labels context_labels(const Labels& static_labels, const Snapshot& snapshot, bool with_job = true);

// A reason becomes an alert when its severity is warning or critical; info reasons are only exported as
// metrics (stallscope_profile_reason_active), never pushed to Alertmanager.
bool is_alerting(const Reason& reason);

// Alert name from a reason code: "fabric_congestion" -> "StallscopeFabricCongestion" (Prometheus alert
// naming convention, CamelCase); characters outside [A-Za-z0-9] act as word separators.
std::string alert_name(std::string_view reason_code);

}  // namespace stallscope
