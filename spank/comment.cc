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

std::optional<std::string> last_segment(std::string_view output) {
    std::optional<std::string> last;
    while (true) {
        const auto nl = output.find('\n');
        if (nl == std::string_view::npos) return last;
        if (std::optional<std::string> segment = sanitize_segment(output.substr(0, nl))) last = segment;
        output.remove_prefix(nl + 1);
    }
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

}  // namespace stallscope::spank
