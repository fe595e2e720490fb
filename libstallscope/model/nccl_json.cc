#include "libstallscope/model/nccl_json.h"

#include "libstallscope/model/json_fields.h"

namespace stallscope {
namespace {

using json_fields::Reader;

Json peer_json(const NcclPeer& p) {
    return Json{{"rank", p.rank}, {"host", p.host}, {"pid", p.pid}, {"gpus", p.gpus}};
}

NcclPeer read_peer(const Reader& r) {
    NcclPeer p;
    p.rank = static_cast<int>(r.integer("rank").value_or(-1));
    p.host = r.string("host");
    p.pid = r.integer("pid").value_or(-1);
    p.gpus = r.string("gpus");
    return p;
}

Reader sub(const Reader& r, const char* key) {
    static const Json empty = Json::object();
    const Json* v = r.find(key);
    if (v && !v->is_object()) r.wrong_type(key, "an object");
    return Reader{v && v->is_object() ? *v : empty, r.problems, (r.where.empty() ? "" : r.where + ".") + key};
}

Json comm_json(const NcclCommunicator& c) {
    Json o{{"hash", c.hash}, {"size", c.size}, {"ranks_answered", c.ranks_answered}, {"status", c.status}};
    o["missing"] = Json::array();
    for (const auto& m : c.missing)
        o["missing"].push_back(Json{{"peer", peer_json(m.peer)},
                                    {"considered_dead", m.considered_dead},
                                    {"unresponsive", m.unresponsive}});
    o["errors"] = Json::array();
    for (const auto& e : c.errors)
        o["errors"].push_back(Json{{"peer", peer_json(e.peer)},
                                   {"error", e.error},
                                   {"async_error", e.async_error},
                                   {"abort", e.abort}});
    o["mismatches"] = Json::array();
    for (const auto& m : c.mismatches) {
        Json lag = Json::array();
        for (const auto& [rank, count] : m.laggards) lag.push_back(Json::array({rank, count}));
        o["mismatches"].push_back(Json{{"function", m.function},
                                       {"max_count", m.max_count},
                                       {"laggards", std::move(lag)},
                                       {"unlisted_laggards", m.unlisted_laggards}});
    }
    o["max_counts"] = Json::object();
    for (const auto& [f, n] : c.max_counts) o["max_counts"][f] = n;
    return o;
}

bool flag(const Reader& r, const char* key) {
    const Json* v = r.find(key);
    if (v && !v->is_boolean()) r.wrong_type(key, "a boolean");
    return v && v->is_boolean() && v->get<bool>();
}

NcclCommunicator read_comm(const Reader& r) {
    NcclCommunicator c;
    c.hash = r.string("hash");
    c.size = static_cast<int>(r.integer("size").value_or(0));
    c.ranks_answered = static_cast<int>(r.integer("ranks_answered").value_or(0));
    c.status = r.string("status");
    c.missing = r.objects<NcclMissingRank>("missing", [](const Reader& m) {
        return NcclMissingRank{read_peer(sub(m, "peer")), flag(m, "considered_dead"),
                               flag(m, "unresponsive")};
    });
    c.errors = r.objects<NcclRankError>("errors", [](const Reader& e) {
        return NcclRankError{read_peer(sub(e, "peer")), e.string("error"),
                             static_cast<int>(e.integer("async_error").value_or(0)), flag(e, "abort")};
    });
    c.mismatches = r.objects<NcclCountMismatch>("mismatches", [](const Reader& m) {
        NcclCountMismatch x;
        x.function = m.string("function");
        x.max_count = m.u64("max_count").value_or(0);
        x.unlisted_laggards = static_cast<int>(m.integer("unlisted_laggards").value_or(0));
        if (const Json* lag = m.find("laggards"); lag && lag->is_array())
            for (const auto& pair : *lag)
                if (pair.is_array() && pair.size() == 2 && pair[0].is_number_integer() &&
                    pair[1].is_number_unsigned())
                    x.laggards.emplace_back(pair[0].get<int>(), pair[1].get<std::uint64_t>());
        return x;
    });
    if (const Json* mc = r.find("max_counts"); mc && mc->is_object()) {
        Reader inner{*mc, r.problems, r.where + ".max_counts"};
        for (auto it = mc->begin(); it != mc->end(); ++it)
            if (auto n = inner.u64(it.key().c_str())) c.max_counts[it.key()] = *n;
    }
    return c;
}

Json ras_json(const NcclRasReport& r) {
    Json o{{"time", r.time},
           {"outcome", r.outcome},
           {"detail", r.detail},
           {"format", r.format},
           {"nccl_version", r.nccl_version},
           {"partial", r.partial},
           {"collection_seconds", r.collection_seconds},
           {"timeouts", r.timeouts},
           {"communicators_count", r.communicators_count}};
    o["dead_processes"] = Json::array();
    for (const auto& p : r.dead_processes) o["dead_processes"].push_back(peer_json(p));
    o["missing_processes"] = Json::array();
    for (const auto& p : r.missing_processes) o["missing_processes"].push_back(peer_json(p));
    o["communicators"] = Json::array();
    for (const auto& c : r.communicators) o["communicators"].push_back(comm_json(c));
    return o;
}

NcclRasReport read_ras(const Reader& r) {
    NcclRasReport x;
    x.time = r.number("time").value_or(0);
    x.outcome = r.string("outcome");
    x.detail = r.string("detail");
    x.format = r.string("format");
    x.nccl_version = r.string("nccl_version");
    x.partial = flag(r, "partial");
    x.collection_seconds = r.number("collection_seconds").value_or(0);
    x.timeouts = static_cast<int>(r.integer("timeouts").value_or(0));
    x.communicators_count = static_cast<int>(r.integer("communicators_count").value_or(0));
    x.dead_processes = r.objects<NcclPeer>("dead_processes", read_peer);
    x.missing_processes = r.objects<NcclPeer>("missing_processes", read_peer);
    x.communicators = r.objects<NcclCommunicator>("communicators", read_comm);
    return x;
}

Json fields_json(const std::map<std::string, std::string>& m) {
    Json o = Json::object();
    for (const auto& [k, v] : m) o[k] = v;
    return o;
}

}  // namespace

Json nccl_to_json(const NcclState& s) {
    Json o = Json::object();
    o["ras"] = Json::array();
    for (const auto& r : s.ras) o["ras"].push_back(ras_json(r));
    o["ras_events"] = Json::array();
    for (const auto& e : s.ras_events)
        o["ras_events"].push_back(Json{{"timestamp", e.timestamp},
                                       {"group", e.group},
                                       {"event", e.event},
                                       {"peer", peer_json(e.peer)},
                                       {"details", e.details}});
    Json colls = Json::array();
    for (const auto& c : s.inspector.collectives)
        colls.push_back(Json{{"comm", c.comm},
                             {"coll", c.coll},
                             {"msg_size_bytes", c.msg_size_bytes},
                             {"rank", c.rank},
                             {"n_ranks", c.n_ranks},
                             {"host", c.host},
                             {"records", c.records},
                             {"median_busbw_gbs", c.median_busbw_gbs},
                             {"median_exec_us", c.median_exec_us}});
    Json stragglers = Json::array();
    for (const auto& g : s.inspector.stragglers)
        stragglers.push_back(Json{{"comm", g.comm},
                                  {"coll", g.coll},
                                  {"rank", g.rank},
                                  {"host", g.host},
                                  {"instances", g.instances},
                                  {"late", g.late},
                                  {"median_skew_us", g.median_skew_us}});
    o["inspector"] = Json{{"collectives", std::move(colls)}, {"stragglers", std::move(stragglers)}};
    o["log_events"] = Json::array();
    for (const auto& e : s.log_events)
        o["log_events"].push_back(Json{{"kind", e.kind},
                                       {"file", e.file},
                                       {"host", e.host},
                                       {"rank", e.rank},
                                       {"pid", e.pid},
                                       {"fields", fields_json(e.fields)},
                                       {"line", e.line}});
    if (s.nccl_test) {
        const auto& t = *s.nccl_test;
        auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
        o["nccl_test"] = Json{{"outcome", t.outcome},
                              {"exit_code", t.exit_code},
                              {"command", t.command},
                              {"seconds", t.seconds},
                              {"avg_busbw_gbs", opt(t.avg_busbw_gbs)},
                              {"peak_busbw_gbs", opt(t.peak_busbw_gbs)},
                              {"peak_size_bytes", opt(t.peak_size_bytes)},
                              {"wrong", opt(t.wrong)},
                              {"rows", t.rows},
                              {"errors", t.errors}};
    }
    return o;
}

NcclState nccl_from_json(const Json& object, std::vector<std::string>& problems) {
    NcclState s;
    const Reader r{object, problems, "nccl"};
    s.ras = r.objects<NcclRasReport>("ras", read_ras);
    s.ras_events = r.objects<NcclRasEvent>("ras_events", [](const Reader& e) {
        return NcclRasEvent{e.string("timestamp"), e.string("group"), e.string("event"),
                            read_peer(sub(e, "peer")), e.string("details")};
    });
    const Reader insp = sub(r, "inspector");
    s.inspector.collectives = insp.objects<NcclCollectiveStats>("collectives", [](const Reader& c) {
        NcclCollectiveStats x;
        x.comm = c.string("comm");
        x.coll = c.string("coll");
        x.msg_size_bytes = c.u64("msg_size_bytes").value_or(0);
        x.rank = static_cast<int>(c.integer("rank").value_or(-1));
        x.n_ranks = static_cast<int>(c.integer("n_ranks").value_or(0));
        x.host = c.string("host");
        x.records = static_cast<int>(c.integer("records").value_or(0));
        x.median_busbw_gbs = c.number("median_busbw_gbs").value_or(0);
        x.median_exec_us = c.number("median_exec_us").value_or(0);
        return x;
    });
    s.inspector.stragglers = insp.objects<NcclStraggler>("stragglers", [](const Reader& g) {
        NcclStraggler x;
        x.comm = g.string("comm");
        x.coll = g.string("coll");
        x.rank = static_cast<int>(g.integer("rank").value_or(-1));
        x.host = g.string("host");
        x.instances = static_cast<int>(g.integer("instances").value_or(0));
        x.late = static_cast<int>(g.integer("late").value_or(0));
        x.median_skew_us = g.number("median_skew_us").value_or(0);
        return x;
    });
    s.log_events = r.objects<NcclLogEvent>("log_events", [](const Reader& e) {
        NcclLogEvent x;
        x.kind = e.string("kind");
        x.file = e.string("file");
        x.host = e.string("host");
        x.rank = static_cast<int>(e.integer("rank").value_or(-1));
        x.pid = e.integer("pid").value_or(-1);
        if (const Json* f = e.find("fields"); f && f->is_object())
            for (auto it = f->begin(); it != f->end(); ++it)
                if (it->is_string()) x.fields[it.key()] = it->get<std::string>();
        x.line = e.string("line");
        return x;
    });
    if (const Json* t = r.find("nccl_test"); t && t->is_object()) {
        const Reader tr{*t, problems, "nccl.nccl_test"};
        NcclTestResult x;
        x.outcome = tr.string("outcome");
        x.exit_code = static_cast<int>(tr.integer("exit_code").value_or(-1));
        x.command = tr.string("command");
        x.seconds = tr.number("seconds").value_or(0);
        x.avg_busbw_gbs = tr.number("avg_busbw_gbs");
        x.peak_busbw_gbs = tr.number("peak_busbw_gbs");
        x.peak_size_bytes = tr.u64("peak_size_bytes");
        x.wrong = tr.u64("wrong");
        x.rows = static_cast<int>(tr.integer("rows").value_or(0));
        x.errors = tr.strings("errors");
        s.nccl_test = std::move(x);
    }
    return s;
}

}  // namespace stallscope
