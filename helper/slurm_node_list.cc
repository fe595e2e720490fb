#include "helper/slurm_node_list.h"

#include <charconv>
#include <cstdint>

namespace stallscope::cli {
namespace {

// One "lo" or "lo-hi" item of a bracket: numbers with the width of lo's digits (Slurm's zero padding).
struct NumberRange {
    std::uint64_t lo = 0, hi = 0;
    std::size_t width = 0;
};

bool parse_number(std::string_view digits, std::uint64_t& value) {
    if (digits.empty() || digits.size() > 18) return false;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return ec == std::errc() && end == digits.data() + digits.size();
}

bool parse_bracket(std::string_view inside, std::vector<NumberRange>& ranges, std::string& error) {
    ranges.clear();
    std::size_t from = 0;
    while (from <= inside.size()) {
        const std::size_t comma = inside.find(',', from);
        const std::string_view item =
            inside.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from);
        const std::size_t dash = item.find('-');
        NumberRange r;
        const std::string_view lo = item.substr(0, dash);
        const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
        if (!parse_number(lo, r.lo) || !parse_number(hi, r.hi) || r.hi < r.lo) {
            error =
                "'[" + std::string(inside) + "]': '" + std::string(item) + "' is not N or N-M with N <= M";
            return false;
        }
        r.width = lo.size();
        ranges.push_back(r);
        if (comma == std::string_view::npos) break;
        from = comma + 1;
    }
    return true;
}

void append_padded(std::string& s, std::uint64_t n, std::size_t width) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    const std::size_t digits = static_cast<std::size_t>(end - buf);
    if (digits < width) s.append(width - digits, '0');
    s.append(buf, digits);
}

// One host expression (no top-level comma): every bracket group multiplies the names so far.
bool expand_expression(std::string_view expr, std::vector<std::string>& out, std::size_t max_names,
                       std::string& error) {
    std::vector<std::string> names{std::string()};
    std::vector<NumberRange> ranges;
    std::size_t at = 0;
    while (at < expr.size()) {
        const std::size_t open = expr.find('[', at);
        const std::string_view text = expr.substr(at, open == std::string_view::npos ? open : open - at);
        if (text.find(']') != std::string_view::npos) {
            error = "unbalanced ']' in '" + std::string(expr) + "'";
            return false;
        }
        for (auto& n : names) n += text;
        if (open == std::string_view::npos) break;
        const std::size_t close = expr.find(']', open);
        if (close == std::string_view::npos) {
            error = "unbalanced '[' in '" + std::string(expr) + "'";
            return false;
        }
        if (!parse_bracket(expr.substr(open + 1, close - open - 1), ranges, error)) return false;
        std::size_t count = 0;
        for (const auto& r : ranges) count += static_cast<std::size_t>(r.hi - r.lo + 1);
        if (count > max_names || out.size() + names.size() * count > max_names) {
            error = "'" + std::string(expr) + "' names more than " + std::to_string(max_names) + " nodes";
            return false;
        }
        std::vector<std::string> next;
        next.reserve(names.size() * count);
        for (const auto& prefix : names)
            for (const auto& r : ranges)
                for (std::uint64_t n = r.lo;; ++n) {
                    next.push_back(prefix);
                    append_padded(next.back(), n, r.width);
                    if (n == r.hi) break;
                }
        names = std::move(next);
        at = close + 1;
    }
    if (names.size() == 1 && names.front().empty()) return true;  // "a,,b": nothing between the commas
    for (auto& n : names) out.push_back(std::move(n));
    return true;
}

}  // namespace

bool expand_node_list(std::string_view list, std::vector<std::string>& out, std::string& error,
                      std::size_t max_names) {
    if (list.empty() || list == "None assigned" || list == "(null)") return true;
    const std::size_t before = out.size();
    std::size_t start = 0, depth = 0;
    for (std::size_t i = 0; i <= list.size(); ++i) {
        const char c = i < list.size() ? list[i] : ',';
        if (c == '[') ++depth;
        if (c == ']') {
            if (depth == 0) {
                error = "unbalanced ']' in '" + std::string(list) + "'";
                out.resize(before);
                return false;
            }
            --depth;
        }
        if (c == ' ' || c == '\t' || c == '\n') {
            error = "a space in node list '" + std::string(list) + "'";
            out.resize(before);
            return false;
        }
        if (c != ',' || depth != 0) continue;
        if (!expand_expression(list.substr(start, i - start), out, max_names, error)) {
            out.resize(before);
            return false;
        }
        start = i + 1;
    }
    if (depth != 0) {
        error = "unbalanced '[' in '" + std::string(list) + "'";
        out.resize(before);
        return false;
    }
    return true;
}

}  // namespace stallscope::cli
