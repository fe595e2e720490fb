// TEXT `STATUS` report: a line-oriented state machine over the sections `Job summary`, `Communicators...`,
// `Errors`, `Warnings` (research notes 1.3, regexes of 1.9). Only the minority groups are itemised by RAS
// (outlier rules 1.3.6), so "who is behind" is derived from the listed lines plus group sizes.
#include <algorithm>
#include <charconv>
#include <regex>

#include "libstallscope/sources/nccl/ras_parse.h"
#include "libstallscope/util/lazy_regex.h"

namespace stallscope::nccl {
namespace {

std::uint64_t to_u64(const std::string& s) {
    std::uint64_t v = 0;
    // A number beyond 2^64 (digits only, as every regex here allows) saturates instead of reading 0.
    if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc::result_out_of_range)
        v = UINT64_MAX;
    return v;
}
double to_double(const std::string& s) {
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);  // never throws, unlike std::stod
    return v;
}
// Counts in a report are capped at 2^30 (no real job has more communicators or timeouts): one number,
// and a total summed over a report's rows, so that two absurd rows cannot overflow the int they land in.
constexpr int kCountCap = 1 << 30;
int to_int(const std::string& s) {
    return static_cast<int>(std::min<std::uint64_t>(to_u64(s), kCountCap));
}
void add_count(int& total, int n) {
    total = n > kCountCap - total ? kCountCap : total + n;
}

const LazyRegex kVersion(R"(^(NCCL|RCCL) version (\S+) compiled with (CUDA|ROCm) (.+)$)");
const LazyRegex kCommsHeader(R"(^Communicators\.\.\. \(([0-9.]+)s\)$)");
const LazyRegex kRow(
    R"(^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+(NOCOMM|UNKNOWN|INIT|RUNNING|FINALIZE|ABORT)\s+((?:INCOMPLETE|ERROR|MISMATCH|OK)(?:,(?:INCOMPLETE|ERROR|MISMATCH))*)\s*$)");
const LazyRegex kCommBlock(R"(^#(\d+)-(\d+) \(([0-9a-f]{1,16})\) (INCOMPLETE|ERROR|MISMATCH)$)");
const LazyRegex kProcess(R"(^  Process (\d+) on node (\S+) managing GPUs? ([\d,]+)(?: \(NVML [\d,]+\))?$)");
const LazyRegex kRankLine(
    R"(^  Rank (\d+)(?: has status (\w+)| reported (.+?)| has launched up to operation (\d+)| (has not launched any operations))? -- (?:GPU (\d+)(?: \(NVML \d+\))? managed by process (\d+) on node (\S+)|\[process information not found\])$)");
const LazyRegex kGroupLine(
    R"(^  (\d+) ranks (?:have (?:status (\w+)|launched up to operation (\d+)|(not launched any operations))|reported (.+))$)");
const LazyRegex kDifferentCounts(R"(^  Communicator ranks have different (\w+) operation counts$)");
const LazyRegex kTimeouts(R"(^  Encountered (\d+) communication timeouts? while gathering)");

// ncclResult_t of the RAS error strings (client_support.cc), so text and JSON reports compare.
int error_code(const std::string& text) {
    static const char* const kTexts[] = {
        "Success",          "Unhandled CUDA error", "System error",         "Internal error",
        "Invalid argument", "Invalid usage",        "Remote process error", "NCCL operation in progress"};
    for (int i = 0; i < 8; ++i)
        if (text == kTexts[i]) return i;
    return 0;
}

int status_rank(const std::string& s) {
    if (s == "ABORT") return 4;
    if (s == "FINALIZE") return 3;
    if (s == "RUNNING") return 2;
    if (s == "INIT") return 1;
    return 0;
}

struct CountGroup {
    std::uint64_t count = 0;
    int size = 0;  // k ranks (1 for an itemised single rank)
    std::vector<int> listed;
};

class TextParser {
  public:
    NcclRasReport run(std::string_view text) {
        r_.format = "text";
        std::size_t pos = 0;
        while (pos < text.size()) {
            std::size_t end = text.find('\n', pos);
            if (end == std::string_view::npos) end = text.size();
            std::string line(text.substr(pos, end - pos));
            if (!line.empty() && line.back() == '\r') line.pop_back();
            on_line(line);
            pos = end + 1;
        }
        finish_block();
        for (auto& c : r_.communicators)
            for (auto& m : c.missing)
                for (const auto& d : r_.dead_processes)
                    if (m.peer.pid >= 0 && m.peer.pid == d.pid && m.peer.host == d.host)
                        m.considered_dead = true;
        r_.partial = recognised_ && !saw_warnings_;
        r_.outcome = recognised_ ? "ok" : "parse_error";
        if (!recognised_) r_.detail = "no RAS report header or section found";
        return std::move(r_);
    }

  private:
    enum class Section { kNone, kSummary, kComms, kErrors, kWarnings };
    enum class Block { kNone, kJobIncomplete, kJobDead, kTimeout, kComm };

    void on_line(const std::string& line) {
        if (line.size() > kMaxRegexLine) {
            // Only a missing-ranks list of a very large job is legitimately this long.
            if (section_ == Section::kErrors || section_ == Section::kWarnings) missing_list(line);
            return;
        }
        std::smatch m;
        if (std::regex_match(line, m, kVersion.get())) {
            r_.nccl_version = (m[1] == "RCCL" ? "rccl-" : "") + m[2].str();
            recognised_ = true;
            return;
        }
        if (line == "Job summary") return section(Section::kSummary);
        if (std::regex_match(line, m, kCommsHeader.get())) {
            r_.collection_seconds = to_double(m[1].str());
            return section(Section::kComms);
        }
        if (line == "Errors") return section(Section::kErrors);
        if (line == "Warnings") {
            saw_warnings_ = true;
            return section(Section::kWarnings);
        }
        if (line.empty() || line.find_first_not_of('=') == std::string::npos) {
            if (!line.empty()) return;
            finish_block();
            return;
        }
        if (section_ == Section::kComms) {
            if (std::regex_match(line, m, kRow.get())) add_count(r_.communicators_count, to_int(m[2]));
            return;
        }
        if (section_ != Section::kErrors && section_ != Section::kWarnings) return;
        if (line == "INCOMPLETE") return start(Block::kJobIncomplete);
        if (line == "DEAD") return start(Block::kJobDead);
        if (line == "TIMEOUT") return start(Block::kTimeout);
        if (std::regex_match(line, m, kCommBlock.get())) {
            start(Block::kComm);
            comm_ = &comm(normalize_comm_hash(m[3].str()));
            kind_ = m[4];
            return;
        }
        detail(line);
    }

    void section(Section s) {
        finish_block();
        section_ = s;
        recognised_ = true;
    }
    void start(Block b) {
        finish_block();
        block_ = b;
    }

    NcclCommunicator& comm(const std::string& hash) {
        for (auto& c : r_.communicators)
            if (c.hash == hash) return c;
        r_.communicators.push_back(NcclCommunicator{});
        r_.communicators.back().hash = hash;
        return r_.communicators.back();
    }

    static NcclPeer peer_of(const std::smatch& m, int rank) {
        NcclPeer p;
        p.rank = rank;
        if (m[6].matched) {
            p.gpus = m[6];
            p.pid = static_cast<std::int64_t>(to_u64(m[7]));
            p.host = m[8];
        }
        return p;
    }

    void detail(const std::string& line) {
        std::smatch m;
        if (block_ == Block::kJobIncomplete || block_ == Block::kJobDead) {
            if (std::regex_match(line, m, kProcess.get())) {
                NcclPeer p{-1, m[2], static_cast<std::int64_t>(to_u64(m[1])), m[3]};
                (block_ == Block::kJobDead ? r_.dead_processes : r_.missing_processes).push_back(p);
            }
            return;
        }
        if (block_ == Block::kTimeout) {
            if (std::regex_search(line, m, kTimeouts.get())) add_count(r_.timeouts, to_int(m[1]));
            return;
        }
        if (block_ != Block::kComm || !comm_) return;
        if (std::regex_match(line, m, kDifferentCounts.get())) {
            flush_counts();
            counting_ = true;
            function_ = m[1] == "collective" ? "collective" : m[1].str();
            return;
        }
        if (line == "  Communicator ranks have different status") {
            flush_counts();
            return;
        }
        if (missing_list(line)) return;  // 2.24/2.25
        if (std::regex_match(line, m, kGroupLine.get())) {
            group_status_ = m[2].matched ? m[2].str() : "";
            group_error_ = m[5].matched ? m[5].str() : "";
            if (!group_status_.empty()) note_status(group_status_);
            if (counting_ && (m[3].matched || m[4].matched))
                groups_.push_back(CountGroup{m[3].matched ? to_u64(m[3]) : 0, to_int(m[1]), {}});
            return;
        }
        if (!std::regex_match(line, m, kRankLine.get())) return;
        const int rank = to_int(m[1]);
        const NcclPeer peer = peer_of(m, rank);
        if (kind_ == "INCOMPLETE") {
            NcclMissingRank mr;
            mr.peer = peer;
            mr.unresponsive = true;
            comm_->missing.push_back(mr);
        } else if (kind_ == "ERROR") {
            const std::string err = m[3].matched ? m[3].str() : group_error_;
            comm_->errors.push_back(NcclRankError{peer, err, error_code(err), false});
        } else if (m[2].matched) {  // Rank r has status S
            note_status(m[2]);
            if (m[2] == "ABORT") add_abort(peer);
        } else if (m[4].matched || m[5].matched) {  // Rank r has launched up to / not launched any
            groups_.push_back(CountGroup{m[4].matched ? to_u64(m[4]) : 0, 1, {rank}});
        } else if (counting_ && !groups_.empty()) {
            groups_.back().listed.push_back(rank);
        } else if (group_status_ == "ABORT") {
            add_abort(peer);
        }
    }

    // "  The missing rank(s): 3,17,..." without a regex: the list of a large job can be tens of kB long.
    bool missing_list(const std::string& line) {
        static constexpr std::string_view kOne = "  The missing rank: ", kMany = "  The missing ranks: ";
        std::string_view rest = line;
        if (rest.substr(0, kOne.size()) == kOne)
            rest.remove_prefix(kOne.size());
        else if (rest.substr(0, kMany.size()) == kMany)
            rest.remove_prefix(kMany.size());
        else
            return false;
        if (block_ != Block::kComm || !comm_ || rest.empty() ||
            rest.find_first_not_of("0123456789,") != std::string_view::npos)
            return false;
        for (std::size_t p = 0; p < rest.size();) {
            std::size_t q = rest.find(',', p);
            if (q == std::string_view::npos) q = rest.size();
            NcclMissingRank mr;
            mr.peer.rank = to_int(std::string(rest.substr(p, q - p)));
            mr.unresponsive = true;
            comm_->missing.push_back(mr);
            p = q + 1;
        }
        return true;
    }

    void add_abort(const NcclPeer& peer) {
        for (auto& e : comm_->errors)
            if (e.peer.rank == peer.rank) {
                e.abort = true;
                return;
            }
        comm_->errors.push_back(NcclRankError{peer, "ABORT", 0, true});
    }

    void note_status(const std::string& s) {
        if (comm_ && status_rank(s) >= status_rank(comm_->status)) comm_->status = s;
    }

    void flush_counts() {
        if (counting_ && comm_ && !groups_.empty()) {
            NcclCountMismatch mm;
            mm.function = function_;
            for (const auto& g : groups_) mm.max_count = std::max(mm.max_count, g.count);
            for (const auto& g : groups_) {
                if (g.count >= mm.max_count) continue;
                for (int rank : g.listed) mm.laggards.emplace_back(rank, g.count);
                mm.unlisted_laggards += std::max(0, g.size - static_cast<int>(g.listed.size()));
            }
            std::sort(mm.laggards.begin(), mm.laggards.end());
            comm_->mismatches.push_back(std::move(mm));
        }
        counting_ = false;
        groups_.clear();
    }

    void finish_block() {
        flush_counts();
        block_ = Block::kNone;
        comm_ = nullptr;
        kind_.clear();
        group_status_.clear();
        group_error_.clear();
    }

    NcclRasReport r_;
    Section section_ = Section::kNone;
    Block block_ = Block::kNone;
    bool recognised_ = false, saw_warnings_ = false;
    NcclCommunicator* comm_ = nullptr;
    std::string kind_, group_status_, group_error_, function_;
    bool counting_ = false;
    std::vector<CountGroup> groups_;
};

}  // namespace

std::string normalize_comm_hash(std::string_view hash) {
    if (hash.size() > 2 && hash[0] == '0' && (hash[1] == 'x' || hash[1] == 'X')) hash.remove_prefix(2);
    std::string out;
    for (char c : hash) out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    if (out.size() < 16) out.insert(0, 16 - out.size(), '0');
    return out;
}

int nccl_version_code(std::string_view version) {
    if (version.rfind("rccl-", 0) == 0) version.remove_prefix(5);
    int parts[3] = {0, 0, 0};
    // What NCCL_VERSION_CODE can say: a major below 1000, minor and patch below 100. Anything else (a
    // sign, "rccl-1111111" from a garbled report) is not a version, rather than a product past INT_MAX.
    const auto code = [&] {
        if (parts[0] < 0 || parts[0] > 999 || parts[1] < 0 || parts[1] > 99 || parts[2] < 0 || parts[2] > 99)
            return 0;
        return parts[0] * 10000 + parts[1] * 100 + parts[2];
    };
    const char* p = version.data();
    const char* end = p + version.size();
    for (int i = 0; i < 3; ++i) {
        auto [next, ec] = std::from_chars(p, end, parts[i]);
        if (ec != std::errc()) {
            parts[i] = 0;
            return i == 0 ? 0 : code();
        }
        p = next;
        if (i < 2 && (p == end || *p != '.')) return code();
        if (i < 2) ++p;
    }
    return code();
}

NcclRasReport parse_ras_text(std::string_view text) {
    return TextParser().run(text);
}

NcclRasReport parse_ras_report(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '{') return parse_ras_json(text);
    return parse_ras_text(text);
}

}  // namespace stallscope::nccl
