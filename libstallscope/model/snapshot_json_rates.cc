// JSON of the rates derived from two snapshots (snapshot_json.h).
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {
namespace {

Json delta_table(const DeltaTable& t) {
    Json o = Json::object();
    for (const auto& [entity, row] : t) {
        Json r = Json::object();
        for (const auto& [name, d] : row) {
            if (d.reset || d.wrapped)
                r[name] = Json{{"per_second", d.per_second},
                               {"delta", d.delta},
                               {"reset", d.reset},
                               {"wrapped", d.wrapped}};
            else
                r[name] = d.per_second;
        }
        o[entity] = std::move(r);
    }
    return o;
}

}  // namespace

Json to_json(const Rates& r) {
    return Json{{"interval_seconds", r.interval_seconds},
                {"host", delta_table(r.host)},
                {"interfaces", delta_table(r.interfaces)},
                {"rdma_counters", delta_table(r.rdma_counters)},
                {"rdma_hw_counters", delta_table(r.rdma_hw_counters)},
                {"gpus", delta_table(r.gpus)}};
}

}  // namespace stallscope
