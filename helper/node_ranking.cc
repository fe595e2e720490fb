#include "helper/node_ranking.h"

#include <algorithm>
#include <charconv>

#include "helper/slurm_node_list.h"
#include "libstallscope/timeline/job_comment.h"

namespace stallscope::cli {
namespace {

bool hurts(const std::string& label) {
    return label == "SLOW" || label == "FAIL_RISK";
}

// "+12" in a host list: hosts the comment had no room to name.
bool counted_only(const std::string& host, std::size_t& n) {
    if (host.size() < 2 || host[0] != '+') return false;
    const auto [end, ec] = std::from_chars(host.data() + 1, host.data() + host.size(), n);
    return ec == std::errc() && end == host.data() + host.size();
}

enum class Role { kRootCause, kStraggler, kMissing };

}  // namespace

std::string plain_reason_code(std::string_view top) {
    const std::string_view code = top.substr(0, top.find(':'));
    if (code.empty() || code.size() > 64) return "other";
    for (const char c : code)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return "other";
    return std::string(code);
}

NodeTally& NodeRanker::tally(const std::string& name) {
    const auto [it, added] = index_.try_emplace(name, result_.nodes.size());
    if (added) {
        result_.nodes.emplace_back();
        result_.nodes.back().name = name;
    }
    return result_.nodes[it->second];
}

void NodeRanker::add_job(std::string_view job_id, std::string_view node_list,
                         std::string_view admin_comment) {
    ++result_.rows;
    if (admin_comment.find(kCommentPrefix) == std::string_view::npos) return;  // not recorded by us
    const auto seg = parse_comment_segment(std::string(admin_comment));
    if (!seg) return;
    job_nodes_.clear();
    std::string error;
    if (!expand_node_list(node_list, job_nodes_, error)) {
        if (result_.bad_node_lists++ == 0) result_.first_bad_node_list = std::string(node_list);
        return;
    }
    ++result_.with_verdict;
    for (const auto& node : job_nodes_) ++tally(node).jobs;
    result_.node_runs += job_nodes_.size();

    // Who the job names, each node once per role.
    std::vector<std::pair<const std::string*, Role>> named;
    if (hurts(seg->label) && !seg->node.empty()) named.emplace_back(&seg->node, Role::kRootCause);
    for (const auto* list : {&seg->stragglers, &seg->missing}) {
        const Role role = list == &seg->stragglers ? Role::kStraggler : Role::kMissing;
        for (const auto& host : *list) {
            std::size_t unnamed = 0;
            if (counted_only(host, unnamed))
                result_.unnamed_in_lists += unnamed;
            else
                named.emplace_back(&host, role);
        }
    }
    const std::string reason = plain_reason_code(seg->top);
    std::vector<const std::string*> done;  // nodes already credited with this job
    for (const auto& entry : named) {
        const std::string* host = entry.first;  // not a structured binding: clang 14 cannot capture one
        // Only the nodes slurmctld says the job ran on: a comment names hosts from the job's own files.
        if (std::find(job_nodes_.begin(), job_nodes_.end(), *host) == job_nodes_.end()) {
            ++result_.named_outside_list;
            continue;
        }
        NodeTally& t = tally(*host);
        switch (entry.second) {
            case Role::kRootCause:
                ++t.root_cause, ++t.reasons[reason];
                break;
            case Role::kStraggler:
                ++t.straggler, ++t.reasons["node_straggler"];
                break;
            case Role::kMissing:
                ++t.missing, ++t.reasons["no_verdict"];
                break;
        }
        if (std::any_of(done.begin(), done.end(), [&](const std::string* d) { return *d == *host; }))
            continue;
        done.push_back(host);
        ++t.named, ++result_.named_runs;
        if (t.job_ids.size() == options_.evidence_ids && !t.job_ids.empty())
            t.job_ids.erase(t.job_ids.begin());
        if (options_.evidence_ids > 0) t.job_ids.emplace_back(job_id);
    }
}

NodeRanking NodeRanker::finish() {
    NodeRanking& r = result_;
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        const NodeTally& t = r.nodes[i];
        if (t.named == 0) continue;
        (t.jobs >= static_cast<std::uint32_t>(std::max(options_.min_jobs, 1)) ? r.ranked : r.too_few_jobs)
            .push_back(i);
    }
    const auto worse = [&r](std::size_t a, std::size_t b) {
        const NodeTally &x = r.nodes[a], &y = r.nodes[b];
        // share compared exactly as cross products: no rounding decides an order
        const std::uint64_t lhs = std::uint64_t{x.named} * y.jobs, rhs = std::uint64_t{y.named} * x.jobs;
        if (lhs != rhs) return lhs > rhs;
        if (x.named != y.named) return x.named > y.named;
        return x.name < y.name;
    };
    std::sort(r.ranked.begin(), r.ranked.end(), worse);
    std::sort(r.too_few_jobs.begin(), r.too_few_jobs.end(), worse);
    for (const std::size_t i : r.ranked) {
        const NodeTally& t = r.nodes[i];
        if (t.share() >= options_.drain_share &&
            t.named >= static_cast<std::uint32_t>(options_.drain_min_named))
            r.drain.push_back(i);
    }
    return std::move(r);
}

void read_sacct_nodes_output(std::string_view output, std::string_view delimiter, NodeRanker& ranker) {
    std::string_view job_id, node_list;
    std::string comment;
    bool pending = false;
    const auto flush = [&] {
        if (pending) ranker.add_job(job_id, node_list, comment);
        pending = false;
    };
    while (!output.empty()) {
        const std::size_t nl = output.find('\n');
        const std::string_view line = output.substr(0, nl);
        output.remove_prefix(nl == std::string_view::npos ? output.size() : nl + 1);
        const std::size_t d1 = line.find(delimiter);
        if (d1 == std::string_view::npos) {
            if (pending) (comment += '\n') += line;  // a newline inside the AdminComment
            continue;
        }
        flush();
        const std::size_t d2 = line.find(delimiter, d1 + delimiter.size());
        const std::size_t d3 =
            d2 == std::string_view::npos ? d2 : line.find(delimiter, d2 + delimiter.size());
        if (d3 == std::string_view::npos ||
            line.find(delimiter, d3 + delimiter.size()) != std::string_view::npos) {
            ranker.add_malformed_row();
            continue;
        }
        job_id = line.substr(0, d1);
        // State (between d1 and d2) is not needed: a comment exists only for a job that ran.
        node_list = line.substr(d2 + delimiter.size(), d3 - d2 - delimiter.size());
        comment.assign(line.substr(d3 + delimiter.size()));
        pending = true;
    }
    flush();
}

}  // namespace stallscope::cli
