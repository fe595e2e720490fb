// JSON of the rates derived from two snapshots (snapshot_json.h).
#include "libstallscope/model/json_fields.h"
#include "libstallscope/model/snapshot_json.h"

namespace stallscope {
namespace {

using json_fields::put;

// DeltaTable and DeltaRow are FlatMaps (sorted, unique names), so every key is appended, never searched
// for: operator[] on an ordered_json scans the keys, quadratic in a row of ~50 counters.
Json delta_json(const CounterDelta& d) {
    if (!d.reset && !d.wrapped) return d.per_second;
    Json o = json_fields::object_of(4);
    put(o, "per_second", d.per_second);
    put(o, "delta", d.delta);
    put(o, "reset", d.reset);
    put(o, "wrapped", d.wrapped);
    return o;
}

Json delta_table(const DeltaTable& t) {
    Json o = json_fields::object_of(t.size());
    for (const auto& [entity, row] : t) {
        Json r = json_fields::object_of(row.size());
        for (const auto& [name, d] : row) put(r, name, delta_json(d));
        put(o, entity, std::move(r));
    }
    return o;
}

}  // namespace

Json to_json(const Rates& r) {
    Json o = json_fields::object_of(6);
    put(o, "interval_seconds", r.interval_seconds);
    put(o, "host", delta_table(r.host));
    put(o, "interfaces", delta_table(r.interfaces));
    put(o, "rdma_counters", delta_table(r.rdma_counters));
    put(o, "rdma_hw_counters", delta_table(r.rdma_hw_counters));
    put(o, "gpus", delta_table(r.gpus));
    return o;
}

}  // namespace stallscope
