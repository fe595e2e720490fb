// `stallscope nodes` at cluster scale (issue 39): 100 000 jobs of sacct output parsed and ranked in < 2 s.
//
//   ninja -C build bench/nodes_rank && build/bench/nodes_rank [nodes=10000] [jobs=100000] [repeats=3]
//
// Generates the sacct output `stallscope nodes` asks for (JobID|State|NodeList|AdminComment, --parsable2
// with its delimiter) for `jobs` allocations on a cluster of `nodes` nodes: job sizes 1..64 nodes written
// as Slurm compresses them (gpu[00012-00019], two ranges for some), 5 % without a stallscope segment,
// segments as the job's writer composes them (compose_job_comment_segment: root cause, stragglers,
// missing), some behind another tool's JS1: text. Three planted bad nodes are the root cause of 80 % of
// the jobs they run; everything else is named at random. Times, best of `repeats`, from the same bytes
// in a file:
//   baseline  read the file + split every line into its four fields (the floor any parser pays);
//   ranking   read the file + read_sacct_nodes_output + finish() (node lists expanded, comments parsed).
// Checks that the planted nodes are the top three drain candidates (a fast wrong answer is no result).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "helper/node_ranking.h"
#include "libstallscope/timeline/job_comment.h"

using namespace stallscope;
using namespace stallscope::cli;

namespace {

constexpr std::string_view kDelimiter = "#~8c1f0e2a9b3d4c5e~#";
constexpr double kGoalSeconds = 2.0;

std::string node_name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "gpu%05d", i);
    return buf;
}

std::string range_text(int lo, int hi) {
    char buf[32];
    if (lo == hi)
        std::snprintf(buf, sizeof buf, "%05d", lo);
    else
        std::snprintf(buf, sizeof buf, "%05d-%05d", lo, hi);
    return buf;
}

std::string generate(int nodes, int jobs, const std::vector<int>& bad) {
    std::mt19937 rng(39);
    const int sizes[] = {1, 1, 1, 2, 2, 4, 8, 8, 16, 32, 64};
    std::string out;
    out.reserve(static_cast<std::size_t>(jobs) * 180);
    for (int j = 0; j < jobs; ++j) {
        const int size = std::min(sizes[rng() % std::size(sizes)], nodes);
        std::vector<int> members;
        std::string list;
        if (size >= 4 && rng() % 4 == 0) {  // two ranges: gpu[a-b,c-d]
            const int half = size / 2;
            const int a = static_cast<int>(rng() % static_cast<unsigned>(nodes - half + 1));
            const int c = static_cast<int>(rng() % static_cast<unsigned>(nodes - (size - half) + 1));
            if (c > a + half) {
                for (int i = 0; i < half; ++i) members.push_back(a + i);
                for (int i = 0; i < size - half; ++i) members.push_back(c + i);
                list = "gpu[" + range_text(a, a + half - 1) + "," + range_text(c, c + size - half - 1) + "]";
            }
        }
        if (members.empty()) {
            const int a = static_cast<int>(rng() % static_cast<unsigned>(nodes - size + 1));
            for (int i = 0; i < size; ++i) members.push_back(a + i);
            list = size == 1 ? node_name(a) : "gpu[" + range_text(a, a + size - 1) + "]";
        }
        std::string comment;
        if (rng() % 20 != 0) {
            JobCommentFacts f;
            f.nodes = size;
            f.gpus_measured = 8 * size;
            f.duration_seconds = 3600;
            f.file = "/shared/runs/stallscope-" + std::to_string(1000000 + j) + "/summary.json";
            int culprit = -1;
            for (const int b : bad)
                if (std::find(members.begin(), members.end(), b) != members.end() && rng() % 10 < 8)
                    culprit = b;
            const unsigned roll = rng() % 100;
            if (culprit < 0 && roll < 20) culprit = members[rng() % members.size()];
            if (culprit >= 0) {
                f.label = roll % 3 == 0 ? "FAIL_RISK" : "SLOW";
                f.confidence = 0.85;
                f.top = (f.label == "SLOW" ? "gpu_thermal_throttle:" : "gpu_xid_critical:") +
                        node_name(culprit) + ":GPU-3";
                f.node = node_name(culprit);
            } else {
                f.label = "FAST";
                f.confidence = 0.9;
                f.node = node_name(members.front());
            }
            if (size > 2 && roll % 10 == 1) f.stragglers = {node_name(members[rng() % members.size()])};
            if (size > 2 && roll == 42) f.missing = {node_name(members.back())};
            comment = compose_job_comment_segment(f);
            if (rng() % 10 == 0)
                comment = "JS1:H4sIAAAAAAAAA6tWKkktLlGyUlAqS8wpTtVRSspPSVWyUlAqzs9N1QOxQzUB; " + comment;
        }
        out += std::to_string(1000000 + j);
        out += kDelimiter;
        out += comment.find("FAIL_RISK") != std::string::npos ? "FAILED" : "COMPLETED";
        out += kDelimiter;
        out += list;
        out += kDelimiter;
        out += comment;
        out += '\n';
    }
    return out;
}

std::string read_whole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The floor: the same bytes read and every line cut into its fields, nothing interpreted.
std::size_t baseline_split(const std::string& path) {
    const std::string text = read_whole(path);
    std::string_view rest = text;
    std::size_t fields = 0;
    while (!rest.empty()) {
        const std::size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
        for (std::size_t at = line.find(kDelimiter); at != std::string_view::npos;
             at = line.find(kDelimiter, at + 1))
            ++fields;
        ++fields;
    }
    return fields;
}

NodeRanking rank_file(const std::string& path) {
    const std::string text = read_whole(path);
    NodeRanker ranker;
    read_sacct_nodes_output(text, kDelimiter, ranker);
    return ranker.finish();
}

template <class F>
double best_seconds(int repeats, F&& f) {
    double best = 1e300;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const int nodes = argc > 1 ? std::atoi(argv[1]) : 10000;
    const int jobs = argc > 2 ? std::atoi(argv[2]) : 100000;
    const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
    if (nodes < 64 || jobs < 1) {
        std::fprintf(stderr, "usage: nodes_rank [nodes>=64] [jobs>=1] [repeats]\n");
        return 2;
    }
    const std::vector<int> bad{nodes / 7, nodes / 2 + 3, nodes - 5};
    const std::string text = generate(nodes, jobs, bad);
    char tmpl[] = "/tmp/stallscope-nodes-rank.XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd < 0) {
        std::perror("mkstemp");
        return 1;
    }
    ::close(fd);
    const std::string path = tmpl;
    std::ofstream(path, std::ios::binary) << text;

    std::size_t fields = 0;
    const double baseline = best_seconds(repeats, [&] { fields = baseline_split(path); });
    NodeRanking r;
    const double ranking = best_seconds(repeats, [&] { r = rank_file(path); });
    std::remove(path.c_str());

    std::set<std::string> expected, got;
    for (const int b : bad) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "gpu%05d", b);
        expected.insert(buf);
    }
    for (std::size_t k = 0; k < r.drain.size() && k < 3; ++k) got.insert(r.nodes[r.drain[k]].name);
    std::printf("nodes_rank: %d jobs on %d nodes, %.1f MB of sacct output (%zu fields), best of %d\n", jobs,
                nodes, static_cast<double>(text.size()) / 1e6, fields, repeats);
    std::printf("  jobs with a verdict %zu, node-job pairs %zu, nodes ranked %zu, drain candidates %zu\n",
                r.with_verdict, r.node_runs, r.ranked.size(), r.drain.size());
    std::printf("  baseline (read + split into fields): %.3f s\n", baseline);
    std::printf("  parse + rank (stallscope nodes):     %.3f s  = %.1fx the baseline; goal < %.1f s: %s\n",
                ranking, ranking / baseline, kGoalSeconds, ranking < kGoalSeconds ? "met" : "MISSED");
    const bool right = got == expected;
    std::printf("  planted bad nodes are the top drain candidates: %s\n", right ? "yes" : "NO");
    return right ? 0 : 1;
}
