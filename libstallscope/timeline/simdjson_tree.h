// to_tree: a simdjson DOM element as the Json tree nlohmann's parser would give for the same text, for
// the v2 reader's "set" values and full samples (which snapshot_from_json reads).
#pragma once

#include <simdjson.h>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

Json to_tree(simdjson::dom::element e);

}  // namespace stallscope
