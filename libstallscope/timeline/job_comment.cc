#include "libstallscope/timeline/job_comment.h"

#include <cctype>
#include <cmath>
#include <cstdio>
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

}  // namespace

std::string compose_comment_segment(const StepVerdict& verdict, int gpu_count, const std::string& node,
                                    const std::string& verdict_path) {
    char conf[16];
    std::snprintf(conf, sizeof conf, "%.2f", verdict.confidence);
    std::string s = std::string(kCommentPrefix) + encode(verdict.label) + " conf=" + conf;
    if (!verdict.reasons.empty()) {
        const Reason& top = verdict.reasons.front().reason;
        s += " top=" + encode(top.code) + (top.subject.empty() ? "" : ":" + encode(top.subject));
    } else if (!verdict.unknown_reasons.empty()) {
        s += " top=" + encode(verdict.unknown_reasons.front());
    }
    s += " gpus=" + std::to_string(gpu_count);
    s += " dur=" + std::to_string(static_cast<long long>(std::llround(verdict.duration_seconds())));
    if (!node.empty()) s += " node=" + encode(node);
    const std::string file = " file=" + encode(verdict_path);
    if (!verdict_path.empty() && s.size() + file.size() <= kCommentMaxLength) s += file;
    if (s.size() > kCommentMaxLength) s.resize(kCommentMaxLength);
    return s;
}

std::optional<CommentSegment> parse_comment_segment(const std::string& comment) {
    const auto start = comment.find(kCommentPrefix);
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
            else if (key == "gpus")
                seg.gpus = std::stoi(value);
            else if (key == "dur")
                seg.duration_seconds = std::stod(value);
            else if (key == "node")
                seg.node = decode(value);
            else if (key == "file")
                seg.file = decode(value);
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
