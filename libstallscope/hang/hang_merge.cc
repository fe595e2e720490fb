#include "libstallscope/hang/hang_merge.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "libstallscope/model/json_fields.h"
#include "libstallscope/util/counter_file.h"

namespace stallscope {
namespace {

ThreadActivity activity_from(std::string_view s) {
    for (const auto a :
         {ThreadActivity::spinning, ThreadActivity::runnable, ThreadActivity::futex_wait,
          ThreadActivity::io_wait, ThreadActivity::sleeping, ThreadActivity::stopped, ThreadActivity::exited})
        if (s == to_string(a)) return a;
    return ThreadActivity::unknown;
}

// Ranks by number, over the ranks already in `out` (one index per document: a 1 000-node job is 8 000 ranks).
RankEvidence& rank_slot(HangEvidence& out, std::map<int, std::size_t>& index, int rank,
                        const std::string& host) {
    if (const auto it = index.find(rank); it != index.end()) return out.ranks[it->second];
    index[rank] = out.ranks.size();
    out.ranks.push_back({});
    out.ranks.back().rank = rank;
    out.ranks.back().host = host;
    return out.ranks.back();
}

// "evidence.<step>.<host>.<n>.json" -> (host key "<step>.<host>", n); n < 0 when not that form.
std::pair<std::string, int> episode_of(std::string_view name) {
    constexpr std::string_view kPrefix = "evidence.", kSuffix = ".json";
    if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
        name.substr(name.size() - kSuffix.size()) != kSuffix)
        return {"", -1};
    const std::string_view middle =
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    const std::size_t dot = middle.rfind('.');
    if (dot == std::string_view::npos) return {"", -1};
    int n = -1;
    const std::string_view digits = middle.substr(dot + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size()) return {"", -1};
    return {std::string(middle.substr(0, dot)), n};
}

}  // namespace

void add_evidence_document(const Json& doc, HangEvidence& out, std::vector<std::string>& problems) {
    if (!doc.is_object()) {
        problems.push_back("evidence: not an object");
        return;
    }
    const json_fields::Reader top{doc, problems, "evidence"};
    const std::string host = top.string("host");
    std::map<int, std::size_t> index;
    for (std::size_t i = 0; i < out.ranks.size(); ++i) index[out.ranks[i].rank] = i;
    top.objects<int>("ranks", [&](const json_fields::Reader& r) {
        const auto rank = r.integer("rank");
        if (!rank || *rank < 0 || *rank > 10'000'000) return 0;
        RankEvidence& slot = rank_slot(out, index, static_cast<int>(*rank), host);
        slot.host = host;
        slot.pid = static_cast<long>(r.integer("pid").value_or(-1));
        slot.gpu = static_cast<int>(r.integer("gpu").value_or(-1));
        if (const Json* g = r.find("gpu_state"); g && g->is_object()) {
            const json_fields::Reader gr{*g, problems, r.where + ".gpu_state"};
            RankGpuState st;
            st.utilization_pct = gr.number("utilization_pct");
            st.sm_active_pct = gr.number("sm_active_pct");
            st.power_w = gr.number("power_w");
            st.power_limit_w = gr.number("power_limit_w");
            if (const Json* x = gr.find("xid"); x && x->is_boolean()) st.xid = x->get<bool>();
            slot.gpu_state = st;
        }
        if (const Json* m = r.find("main_thread"); m && m->is_object()) {
            const json_fields::Reader mr{*m, problems, r.where + ".main_thread"};
            RankMainThread t;
            t.activity = activity_from(mr.string("activity"));
            const std::string state = mr.string("state");
            t.state = state.size() == 1 ? state[0] : '?';
            t.wchan = mr.string("wchan").substr(0, 128);
            t.cpu_share = mr.number("cpu_share").value_or(0);
            t.threads_in_d = static_cast<int>(mr.integer("threads_in_d").value_or(0));
            slot.main_thread = t;
        }
        return 0;
    });
    top.objects<int>("ras", [&](const json_fields::Reader& r) {
        RasMismatch m;
        m.function = r.string("function");
        m.max_count = r.u64("max_count").value_or(0);
        if (const Json* l = r.find("laggards"); l && l->is_array())
            for (const auto& pair : *l)
                if (pair.is_array() && pair.size() == 2 && pair[0].is_number_integer() &&
                    pair[1].is_number_unsigned())
                    m.laggards.emplace_back(pair[0].get<int>(), pair[1].get<std::uint64_t>());
        // Every node quotes the same job-level RAS report: keep one copy.
        const bool seen = std::any_of(out.ras.begin(), out.ras.end(), [&](const RasMismatch& x) {
            return x.function == m.function && x.max_count == m.max_count && x.laggards == m.laggards;
        });
        if (!seen && !m.laggards.empty()) out.ras.push_back(std::move(m));
        return 0;
    });
    if (const Json* fr = top.find("flight_recorder"); fr && fr->is_object()) {
        const json_fields::Reader fj{*fr, problems, "evidence.flight_recorder"};
        fj.objects<int>("dumps", [&](const json_fields::Reader& d) {
            const Json* summary = d.find("summary");
            if (!summary) return 0;
            FlightRecorderDump dump = flight_recorder_from_json(*summary, problems);
            if (dump.rank < 0 || dump.rank > 10'000'000) return 0;
            RankEvidence& slot = rank_slot(out, index, dump.rank, host);
            slot.flight_recorder = std::move(dump);
            return 0;
        });
    }
}

JobHangEvidence read_job_hang_evidence(const std::string& dir, std::size_t max_files) {
    return read_job_hang_evidence(std::vector<std::string>{dir}, max_files);
}

JobHangEvidence read_job_hang_evidence(const std::vector<std::string>& dirs, std::size_t max_files) {
    JobHangEvidence out;
    // "<step>.<host>" -> (episode, path): one file per node and step, from whichever dir holds it.
    std::map<std::string, std::pair<int, std::string>> newest;
    std::size_t seen = 0;
    for (const auto& dir : dirs) {
        DIR* d = ::opendir(dir.c_str());
        if (!d) continue;  // no dir, no evidence: the report says what it read
        while (const dirent* e = ::readdir(d)) {
            const auto [key, episode] = episode_of(e->d_name);
            if (episode < 0) continue;
            if (++seen > max_files) {
                out.warnings.push_back("more than " + std::to_string(max_files) +
                                       " evidence files: the rest ignored");
                break;
            }
            auto& slot = newest[key];
            if (slot.second.empty() || episode > slot.first) slot = {episode, dir + "/" + e->d_name};
        }
        ::closedir(d);
        if (seen > max_files) break;
    }
    HangEvidence evidence;
    for (const auto& [key, file] : newest) {
        const std::string& path = file.second;
        std::string error;
        const auto text = read_text_file(path, error, 32u << 20);
        if (!text) {
            out.warnings.push_back(path + ": " + error);
            continue;
        }
        const Json doc = Json::parse(*text, nullptr, false);
        if (doc.is_discarded()) {
            out.warnings.push_back(path + ": not JSON (written while we read it?)");
            continue;
        }
        std::vector<std::string> problems;
        add_evidence_document(doc, evidence, problems);
        for (const auto& p : problems) out.warnings.push_back(path + ": " + p);
        out.files.push_back(path);
    }
    std::sort(evidence.ranks.begin(), evidence.ranks.end(),
              [](const RankEvidence& a, const RankEvidence& b) { return a.rank < b.rank; });
    if (!out.files.empty()) out.finding = name_culprit(evidence);
    return out;
}

}  // namespace stallscope
