#include "libstallscope/timeline/job_comment.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace stallscope {
namespace {

bool plain(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '/' || c == ':' || c == '@' || c == '+' || c == '-';
}

std::string encode(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (plain(static_cast<char>(c))) {
            out.push_back(static_cast<char>(c));
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

std::string decode(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size()) {
            out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
            i += 2;
        } else {
            out.push_back(text[i]);
        }
    }
    return out;
}

std::string gpu_field(int measured, int allocated) {
    return std::to_string(measured) + (allocated >= 0 ? "/" + std::to_string(allocated) : "");
}

// "a,b,c" with at most `budget` characters: whole hosts only, the rest counted as "+N".
std::string host_list(const std::vector<std::string>& hosts, std::size_t budget) {
    std::string out;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        const std::string item = (out.empty() ? "" : ",") + encode(hosts[i]);
        const std::string rest = "+" + std::to_string(hosts.size() - i);
        if (out.size() + item.size() + (i + 1 < hosts.size() ? rest.size() + 1 : 0) > budget)
            return out + (out.empty() ? "" : ",") + rest;
        out += item;
    }
    return out;
}

std::vector<std::string> split_list(const std::string& value) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= value.size()) {
        const auto comma = value.find(',', start);
        const std::string item = decode(value.substr(start, comma - start));
        if (!item.empty()) out.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// Counts the comma-separated ids of a GPU list such as "0,1" (Slurm may also write "0-3").
int count_gpu_ids(const std::string& list) {
    int n = 0;
    for (const std::string& item : split_list(list)) {
        const auto dash = item.find('-');
        if (dash == std::string::npos) {
            ++n;
            continue;
        }
        const long lo = std::strtol(item.c_str(), nullptr, 10),
                   hi = std::strtol(item.c_str() + dash + 1, nullptr, 10);
        n += hi >= lo ? static_cast<int>(hi - lo + 1) : 1;
    }
    return n;
}

// " hang=culprit:rank2@n2/gpu0": at most ~100 characters whatever the host name (cut to 48 before its
// encoding), so it always fits next to the rest of a segment.
std::string hang_field(const JobCommentFacts& f) {
    if (f.hang_kind.empty()) return "";
    std::string out = " hang=" + encode(f.hang_kind.substr(0, 16));
    if (f.hang_rank < 0) return out;
    out += ":rank" + std::to_string(f.hang_rank);
    if (!f.hang_host.empty()) out += "@" + encode(f.hang_host.substr(0, 48));
    if (f.hang_gpu >= 0) out += "/gpu" + std::to_string(f.hang_gpu);
    return out;
}

}  // namespace

int allocated_gpus_from_slurm_env() {
    for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"})
        if (const char* v = std::getenv(name); v && *v) return count_gpu_ids(v);
    if (const char* v = std::getenv("SLURM_GPUS_ON_NODE"); v && *v) {
        char* end = nullptr;
        const long n = std::strtol(v, &end, 10);
        if (end && *end == '\0' && n >= 0 && n < 100000) return static_cast<int>(n);
    }
    return -1;
}

std::string compose_job_comment_segment(const JobCommentFacts& f) {
    char conf[16];
    std::snprintf(conf, sizeof conf, "%.2f", f.confidence);
    std::string head = std::string(kCommentPrefix) + encode(f.label) + " conf=" + conf;
    if (!f.top.empty()) head += " top=" + encode(f.top);
    head += " nodes=" + std::to_string(f.nodes);
    std::string tail = " gpus=" + gpu_field(f.gpus_measured, f.gpus_allocated) +
                       " dur=" + std::to_string(static_cast<long long>(std::llround(f.duration_seconds)));
    if (!f.node.empty()) tail += " node=" + encode(f.node);
    const std::string file = f.file.empty() ? "" : " file=" + encode(f.file);
    const std::string hang = hang_field(f);
    // The host lists share what is left of a typical 256-character segment; a long file= path
    // may still push the segment past it, never past kCommentMaxLength.
    const std::size_t fixed = head.size() + tail.size() + file.size() + hang.size() + 24;
    const std::size_t budget = fixed < 256 ? (256 - fixed) / 2 : 16;
    if (!f.missing.empty()) head += " missing=" + host_list(f.missing, budget);
    if (!f.stragglers.empty()) head += " stragglers=" + host_list(f.stragglers, budget);
    std::string s = head + tail;
    // file= is dropped before hang=: the summary it points to is found from the job's output dir anyway.
    if (s.size() + file.size() + hang.size() <= kCommentMaxLength) s += file;
    if (s.size() + hang.size() <= kCommentMaxLength) s += hang;
    if (s.size() > kCommentMaxLength) s.resize(kCommentMaxLength);
    return s;
}

std::string compose_comment_segment(const StepVerdict& verdict, int gpu_count, const std::string& node,
                                    const std::string& verdict_path, int allocated_gpus) {
    char conf[16];
    std::snprintf(conf, sizeof conf, "%.2f", verdict.confidence);
    std::string s = std::string(kCommentPrefix) + encode(verdict.label) + " conf=" + conf;
    if (!verdict.reasons.empty()) {
        const Reason& top = verdict.reasons.front().reason;
        s += " top=" + encode(top.code) + (top.subject.empty() ? "" : ":" + encode(top.subject));
    } else if (!verdict.unknown_reasons.empty()) {
        s += " top=" + encode(verdict.unknown_reasons.front());
    }
    s += " gpus=" + gpu_field(gpu_count, allocated_gpus);
    s += " dur=" + std::to_string(static_cast<long long>(std::llround(verdict.duration_seconds())));
    if (!node.empty()) s += " node=" + encode(node);
    const std::string file = " file=" + encode(verdict_path);
    if (!verdict_path.empty() && s.size() + file.size() <= kCommentMaxLength) s += file;
    if (s.size() > kCommentMaxLength) s.resize(kCommentMaxLength);
    return s;
}

std::optional<CommentSegment> parse_comment_segment(const std::string& comment) {
    // Ours is a whole segment: at the start of the comment or right after the "; " that joins segments
    // (spank/comment.cc merge_comment). "stallscope/1 ..." inside another segment (a foreign tool's text,
    // or a value a job put there) is not ours and is never read.
    std::size_t start = comment.find(kCommentPrefix);
    while (start != std::string::npos && start != 0 &&
           (start < 2 || comment.compare(start - 2, 2, "; ") != 0))
        start = comment.find(kCommentPrefix, start + 1);
    if (start == std::string::npos) return std::nullopt;
    std::istringstream in(comment.substr(start + std::string(kCommentPrefix).size()));
    CommentSegment seg;
    if (!(in >> seg.label)) return std::nullopt;
    // sacctmgr (22.05) lowercases the comments it sets, so the post-job epilog path stores "slow".
    for (char& c : seg.label) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string word;
    while (in >> word) {
        // The plugin joins segments of different tools with "; " (spank/comment.h): a ';' ends ours.
        const bool last = !word.empty() && word.back() == ';';
        if (last) word.pop_back();
        const auto eq = word.find('=');
        if (eq == std::string::npos) break;  // end of our segment: another tool's text follows
        const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
        try {
            if (key == "conf")
                seg.confidence = std::stod(value);
            else if (key == "top")
                seg.top = decode(value);
            else if (key == "gpus") {
                seg.gpus = std::stoi(value);
                if (const auto slash = value.find('/'); slash != std::string::npos)
                    seg.gpus_allocated = std::stoi(value.substr(slash + 1));
            } else if (key == "nodes")
                seg.nodes = std::stoi(value);
            else if (key == "missing")
                seg.missing = split_list(value);
            else if (key == "stragglers")
                seg.stragglers = split_list(value);
            else if (key == "dur")
                seg.duration_seconds = std::stod(value);
            else if (key == "node")
                seg.node = decode(value);
            else if (key == "file")
                seg.file = decode(value);
            else if (key == "hang")
                seg.hang = decode(value);
            else
                break;
        } catch (const std::exception&) {
            break;  // a foreign "key=garbage": stop, keep what we have
        }
        if (last) break;
    }
    return seg;
}

}  // namespace stallscope
