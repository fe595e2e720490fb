#include "libstallscope/timeline/documents.h"

#include "libstallscope/timeline/timeline.h"
#include "stallscope_config.h"

namespace stallscope {

Json timeline_header(const Snapshot& first, double interval_seconds,
                     const std::vector<std::pair<std::string, double>>& thresholds) {
    const auto& c = first.context;
    Json h{{"type", "header"},
           {"schema", kTimelineSchema},
           {"stallscope_version", STALLSCOPE_VERSION},
           {"host", first.host},
           {"scheduler", c.scheduler},
           {"job_id", c.job_id},
           {"step_id", c.step_id},
           {"job_name", c.job_name},
           {"user", c.user},
           {"nodelist", c.nodelist},
           {"node_id", c.node_id},
           {"allocated_gpus", c.gpus},
           {"interval_seconds", interval_seconds},
           {"started", format_rfc3339(first.time)}};
    Json gpus = Json::array(), ports = Json::array(), ifaces = Json::array();
    for (const auto& g : first.gpus)
        gpus.push_back(Json{{"index", g.index},
                            {"uuid", g.uuid},
                            {"pci_bus_id", g.pci_bus_id},
                            {"name", g.name},
                            {"vendor", g.vendor},
                            {"minor_number", g.minor_number ? Json(*g.minor_number) : Json()}});
    for (const auto& p : first.rdma)
        ports.push_back(Json{{"port", p.key()},
                             {"link_layer", p.link_layer},
                             {"netdev", p.netdev},
                             {"rate_gbps", p.rate_gbps ? Json(*p.rate_gbps) : Json()}});
    for (const auto& i : first.interfaces) ifaces.push_back(i.name);
    h["inventory"] = Json{{"gpus", gpus}, {"rdma", ports}, {"interfaces", ifaces}};
    Json t = Json::object();
    for (const auto& [k, v] : thresholds) t[k] = v;
    h["thresholds"] = t;
    return h;
}

Json verdict_document(const Json& header, const StepVerdict& verdict, const std::string& timeline_path,
                      const std::vector<std::string>& warnings) {
    Json d{{"schema", kVerdictSchema}};
    for (const char* key : {"host", "scheduler", "job_id", "step_id", "job_name", "user", "nodelist",
                            "node_id", "allocated_gpus", "interval_seconds", "inventory"})
        if (header.is_object() && header.contains(key)) d[key] = header[key];
    d["timeline"] = timeline_path;
    d["verdict"] = to_json(verdict);
    d["warnings"] = warnings;
    return d;
}

Json verdict_document(const Json& header, const StepVerdict& verdict, const std::string& timeline_path,
                      const std::vector<std::string>& warnings, const Json& node_stats) {
    Json d = verdict_document(header, verdict, timeline_path, warnings);
    if (node_stats.is_object()) d["node_stats"] = node_stats;
    return d;
}

std::vector<Json> events_between(const Snapshot* previous, const Snapshot& current) {
    // Called every sample and almost always empty: no strings built unless there is an event.
    std::vector<Json> events;
    std::string t;
    auto time = [&]() -> const std::string& {
        if (t.empty()) t = format_rfc3339(current.time);
        return t;
    };
    if (previous) {
        for (const auto& now : current.rdma)
            for (const auto& before : previous->rdma)
                if (before.port == now.port && before.device == now.device &&
                    (before.state != now.state || before.phys_state != now.phys_state))
                    events.push_back(Json{{"type", "event"},
                                          {"time", time()},
                                          {"kind", "link_state"},
                                          {"port", now.key()},
                                          {"from", before.state + "/" + before.phys_state},
                                          {"to", now.state + "/" + now.phys_state}});
    }
    for (const auto& x : current.xid_events)
        events.push_back(Json{{"type", "event"},
                              {"time", time()},
                              {"kind", "xid"},
                              {"code", x.code},
                              {"pci_bus_id", x.pci_bus_id},
                              {"gpu_index", x.gpu_index},
                              {"severity", x.severity},
                              {"message", x.message}});
    return events;
}

}  // namespace stallscope
