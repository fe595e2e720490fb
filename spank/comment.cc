#include "spank/comment.h"

#include <optional>
#include <vector>

namespace stallscope::spank {

std::optional<std::string> sanitize_segment(std::string_view line) {
    auto nl = line.find('\n');
    if (nl != std::string_view::npos) line = line.substr(0, nl);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.remove_suffix(1);
    if (line.substr(0, kSegmentPrefix.size()) != kSegmentPrefix) return std::nullopt;
    std::string out;
    for (char ch : line) {
        if (ch < 0x20 || ch > 0x7e) return std::nullopt;  // control or non-ASCII: not ours
        out += ch == ';' ? ',' : ch;
    }
    if (out.size() > kSegmentCap) out.resize(kSegmentCap);
    while (out.back() == ' ') out.pop_back();
    if (out.size() <= kSegmentPrefix.size()) return std::nullopt;
    return out;
}

int comment_rank(std::string_view segment) {
    if (segment.substr(0, kSegmentPrefix.size()) != kSegmentPrefix) return -1;
    segment.remove_prefix(kSegmentPrefix.size());
    const std::string_view label = segment.substr(0, segment.find(' '));
    if (label == "UNKNOWN") return 0;
    if (label == "FAST") return 1;
    if (label == "SLOW") return 2;
    if (label == "FAIL_RISK") return 3;
    return -1;
}

namespace {

bool is_our_segment(std::string_view part) {
    return part.substr(0, 11) == "stallscope/";
}

// Splits on "; " keeping the pieces verbatim.
std::vector<std::string_view> split_segments(std::string_view text) {
    std::vector<std::string_view> parts;
    while (true) {
        auto pos = text.find(kSegmentSeparator);
        if (pos == std::string_view::npos) {
            parts.push_back(text);
            return parts;
        }
        parts.push_back(text.substr(0, pos));
        text.remove_prefix(pos + kSegmentSeparator.size());
    }
}

}  // namespace

std::optional<std::string> merge_comment(std::string_view existing, std::string_view segment) {
    std::string kept;
    if (!existing.empty()) {
        for (std::string_view part : split_segments(existing)) {
            if (is_our_segment(part)) continue;
            if (!kept.empty()) kept += kSegmentSeparator;
            kept += part;
        }
    }
    std::string prefix = kept.empty() ? "" : kept + std::string(kSegmentSeparator);
    constexpr std::size_t kMinSegment = 24;  // "stallscope/1 SLOW conf=0" still says something
    if (prefix.size() + std::min(segment.size(), kMinSegment) > kCommentCap) return std::nullopt;
    std::string_view ours = segment.substr(0, kCommentCap - prefix.size());
    while (!ours.empty() && ours.back() == ' ') ours.remove_suffix(1);
    return prefix + std::string(ours);
}

std::string segment_file(std::string_view segment) {
    std::size_t pos = 0;
    while ((pos = segment.find("file=", pos)) != std::string_view::npos) {
        if (pos == 0 || segment[pos - 1] == ' ') {
            std::string_view rest = segment.substr(pos + 5);
            return std::string(rest.substr(0, rest.find(' ')));
        }
        pos += 5;
    }
    return {};
}

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    while (!text.empty()) {
        auto nl = text.find('\n');
        lines.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return lines;
}

}  // namespace

ScontrolAdminComment parse_scontrol_admin_comment(std::string_view multi_line, std::string_view one_line,
                                                  std::string_view job_id) {
    ScontrolAdminComment result;  // ambiguous until proven otherwise
    while (!one_line.empty() && one_line.back() == '\n') one_line.remove_suffix(1);
    std::string first = "JobId=" + std::string(job_id) + " ";
    // Job arrays: `scontrol show job <array id>` prints every task of the array, one record each
    // (one line each with -o, blank-line separated blocks without). Only the record whose JobId is
    // exactly ours is read; zero or two such records (a forged "\nJobId=<id> " in a name) are ambiguous.
    // WorkDir is fixed at submission: a newline in it shows in every one-liner, so the check below
    // cannot be raced (JobName and Comment can change between the two calls, WorkDir cannot). A line
    // of the one-liner output that is not a record start means some field holds a newline: ambiguous.
    std::optional<std::string_view> our_line;
    for (std::string_view line : split_lines(one_line)) {
        if (line.substr(0, 6) != "JobId=") return result;
        if (line.substr(0, first.size()) != first) continue;
        if (our_line) return result;
        our_line = line;
    }
    if (!our_line) return result;
    one_line = *our_line;
    std::optional<std::string_view> our_block;
    for (std::string_view rest = multi_line; !rest.empty();) {
        while (!rest.empty() && rest.front() == '\n') rest.remove_prefix(1);  // the blank separator lines
        const auto gap = rest.find("\n\n");
        const std::string_view block = rest.substr(0, gap == std::string_view::npos ? rest.size() : gap + 1);
        if (block.substr(0, first.size()) == first) {
            if (our_block) return result;
            our_block = block;
        }
        if (gap == std::string_view::npos) break;
        rest.remove_prefix(gap + 2);
    }
    if (!our_block) return result;
    multi_line = *our_block;
    constexpr std::string_view kWorkDir = "   WorkDir=", kAdmin = "   AdminComment=";
    std::vector<std::string_view> lines = split_lines(multi_line);
    std::size_t workdir_line = 0, workdir_count = 0, admin_line = 0, admin_count = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        if (lines[i].substr(0, kWorkDir.size()) == kWorkDir) workdir_line = i, ++workdir_count;
        if (lines[i].substr(0, kAdmin.size()) == kAdmin) admin_line = i, ++admin_count;
    }
    // 22.05 prints AdminComment (when set) on the line right after WorkDir (slurm_sprint_job_info).
    // A forged line elsewhere (JobName, Comment, StdOut with a newline), a second WorkDir line, or a
    // second AdminComment line: we cannot tell the real one, so we do not read any.
    if (workdir_count != 1 || admin_count > 1) return result;
    if (admin_count == 1 && admin_line != workdir_line + 1) return result;
    std::string_view workdir = lines[workdir_line].substr(kWorkDir.size());
    std::string value;
    if (admin_count == 1) {
        std::string_view v = lines[admin_line].substr(kAdmin.size());
        if (!v.empty() && v.back() == ' ') v.remove_suffix(1);  // scontrol appends one space
        value = v;
    }
    // The same fields in the one-liner (a rename between the two calls changes JobName, which precedes
    // WorkDir, never this stretch): "WorkDir=<w> AdminComment=<value> " or "WorkDir=<w> " without it.
    const std::string with = " WorkDir=" + std::string(workdir) + " AdminComment=";
    const auto at = one_line.find(with);
    if (at != one_line.rfind(with)) return result;
    if (admin_count == 1) {
        if (at == std::string_view::npos ||
            one_line.substr(at + with.size(), value.size() + 1) != value + " ")
            return result;
        result.state = AdminCommentRead::present;
        result.value = value;
    } else {
        if (at != std::string_view::npos) return result;
        result.state = AdminCommentRead::absent;
    }
    return result;
}

}  // namespace stallscope::spank
