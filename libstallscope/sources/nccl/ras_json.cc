// JSON `STATUS` report (research notes 1.4) and the MONITOR event stream (1.5).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "libstallscope/sources/nccl/ras_parse.h"
#include "libstallscope/util/lazy_regex.h"

namespace stallscope::nccl {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxListedLaggards = 64;

std::int64_t int_of(const json& o, const char* key, std::int64_t fallback = 0) {
    auto it = o.find(key);
    return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}
bool bool_of(const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_boolean() && it->get<bool>();
}
std::string str_of(const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

NcclPeer peer_of(const json& r) {
    NcclPeer p;
    p.rank = static_cast<int>(int_of(r, "rank", -1));
    p.host = str_of(r, "host");
    p.pid = int_of(r, "pid", -1);
    const auto dev = int_of(r, "cuda_dev", -1);
    if (dev >= 0) p.gpus = std::to_string(dev);
    return p;
}

// ncclSuccess (0) and ncclInProgress (7) are not errors (7 = still initialising, non-blocking init).
bool is_error(std::int64_t code) {
    return code != 0 && code != 7;
}

NcclCommunicator read_comm(const json& c, NcclRasReport& report) {
    NcclCommunicator out;
    out.hash = normalize_comm_hash(str_of(c, "hash"));
    out.size = static_cast<int>(int_of(c, "size"));
    out.ranks_answered = static_cast<int>(int_of(c, "ranks_count"));
    std::map<std::string, std::vector<std::pair<int, std::uint64_t>>> counts;
    int best_status = -1;
    static const char* const kStatus[] = {"INIT", "RUNNING", "FINALIZE", "ABORT"};
    if (auto it = c.find("ranks"); it != c.end() && it->is_array()) {
        for (const auto& r : *it) {
            if (!r.is_object()) continue;
            const NcclPeer peer = peer_of(r);
            const json st = r.contains("status") && r["status"].is_object() ? r["status"] : json::object();
            const bool abort = bool_of(st, "abort_flag");
            const auto init = int_of(st, "init_state"), async = int_of(st, "async_error");
            const int status = abort                                                           ? 3
                               : bool_of(st, "finalize_called") || bool_of(st, "destroy_flag") ? 2
                               : init == 0                                                     ? 1
                                                                                               : 0;
            best_status = std::max(best_status, status);
            if (abort || is_error(init) || is_error(async)) {
                std::string what = is_error(async)  ? "async_error " + std::to_string(async)
                                   : is_error(init) ? "init_state " + std::to_string(init)
                                                    : "ABORT";
                out.errors.push_back(
                    NcclRankError{peer, what, static_cast<int>(is_error(async) ? async : 0), abort});
            }
            if (auto cc = r.find("collective_counts"); cc != r.end() && cc->is_object())
                for (auto f = cc->begin(); f != cc->end(); ++f)
                    if (f->is_number_unsigned() || f->is_number_integer())
                        counts[f.key()].emplace_back(peer.rank, f->get<std::uint64_t>());
        }
    }
    if (best_status >= 0) out.status = kStatus[best_status];
    for (auto& [function, per_rank] : counts) {
        std::uint64_t max = 0;
        for (const auto& [rank, n] : per_rank) max = std::max(max, n);
        out.max_counts[function] = max;
        NcclCountMismatch mm;
        mm.function = function;
        mm.max_count = max;
        std::sort(per_rank.begin(), per_rank.end());
        for (const auto& [rank, n] : per_rank) {
            if (n >= max) continue;
            if (mm.laggards.size() < kMaxListedLaggards)
                mm.laggards.emplace_back(rank, n);
            else
                ++mm.unlisted_laggards;
        }
        if (!mm.laggards.empty()) out.mismatches.push_back(std::move(mm));
    }
    if (auto it = c.find("missing_ranks"); it != c.end() && it->is_array()) {
        for (const auto& m : *it) {
            if (!m.is_object()) continue;
            const json st = m.contains("status") && m["status"].is_object() ? m["status"] : json::object();
            NcclMissingRank mr{peer_of(m), bool_of(st, "considered_dead"), bool_of(st, "unresponsive")};
            if (mr.considered_dead) {
                NcclPeer process = mr.peer;
                process.rank = -1;
                const bool known = std::any_of(
                    report.dead_processes.begin(), report.dead_processes.end(),
                    [&](const NcclPeer& d) { return d.pid == process.pid && d.host == process.host; });
                if (!known) report.dead_processes.push_back(process);
            }
            out.missing.push_back(std::move(mr));
        }
    }
    return out;
}

// Index just past the end of the JSON value starting at `start` (an object), or npos if incomplete.
std::size_t object_end(const std::string& text, std::size_t start) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = start; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{') {
            ++depth;
        } else if (c == '}' && --depth == 0) {
            return i + 1;
        }
    }
    return std::string::npos;
}

// Digits only (the regex): from_chars, -1 when it does not fit (std::stoll threw on 20 digits).
std::int64_t parse_pid(const std::string& digits) {
    std::int64_t v = -1;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), v).ec != std::errc()) v = -1;
    return v;
}

const LazyRegex kTextEvent(R"(^\[([^\]]+)\] ([A-Z_]+): ?(.*)$)");
const LazyRegex kEventPeer(
    R"(^Process (\d+) on node (\S+) managing GPUs? ([\d,]+)(?: \(NVML [\d,]+\))? ?(.*)$)");
const LazyRegex kEventAddr(R"(^(\S+<\d+>) ?(.*)$)");

bool text_event(const std::string& line, NcclRasEvent& e) {
    if (line.size() > kMaxRegexLine) return false;  // counted as garbage; see kMaxRegexLine
    std::smatch m;
    if (!std::regex_match(line, m, kTextEvent.get())) return false;
    e.timestamp = m[1];
    e.event = m[2];
    const std::string rest = m[3];
    if (std::regex_match(rest, m, kEventPeer.get())) {
        e.peer.pid = parse_pid(m[1].str());
        e.peer.host = m[2];
        e.peer.gpus = m[3];
        e.details = m[4];
    } else if (std::regex_match(rest, m, kEventAddr.get())) {
        e.peer.host = m[1];
        e.details = m[2];
    } else {
        e.details = rest;
    }
    while (!e.details.empty() && e.details.back() == ' ') e.details.pop_back();
    return true;
}

bool json_event(const json& o, NcclRasEvent& e) {
    if (!o.is_object() || !o.contains("event")) return false;
    e.timestamp = str_of(o, "timestamp");
    e.group = str_of(o, "group");
    e.event = str_of(o, "event");
    e.details = str_of(o, "details");
    if (auto p = o.find("peer"); p != o.end() && p->is_object()) {
        e.peer.host = p->contains("addr") ? str_of(*p, "addr") : str_of(*p, "host");
        e.peer.pid = int_of(*p, "pid", -1);
        if (auto d = p->find("cuda_devs"); d != p->end() && d->is_array()) {
            for (const auto& dev : *d)
                if (dev.is_number_integer())
                    e.peer.gpus += (e.peer.gpus.empty() ? "" : ",") + std::to_string(dev.get<int>());
        }
    }
    return !e.event.empty();
}

}  // namespace

std::string repair_ras_json(std::string_view text) {
    // Ray Train's repair (research notes 1.4): a value ending in a digit, quote, 'e' (true/false) or 'l'
    // (null) followed by a newline and a "key": line lacks its comma. By hand, line by line: the regex
    // form recursed once per character of a long line and crashed on a 100 k-character one.
    auto blank = [](char c) { return c == ' ' || c == '\t'; };
    auto key_line = [&](std::string_view line) {  // [ \t]*"[^"\n]*"[ \t]*:
        std::size_t i = 0;
        while (i < line.size() && blank(line[i])) ++i;
        if (i == line.size() || line[i] != '"') return false;
        const std::size_t close = line.find('"', i + 1);
        if (close == std::string_view::npos) return false;
        i = close + 1;
        while (i < line.size() && blank(line[i])) ++i;
        return i < line.size() && line[i] == ':';
    };
    std::string out;
    out.reserve(text.size() + 16);
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        std::size_t end = line.size();
        while (end > 0 && (blank(line[end - 1]) || line[end - 1] == '\r')) --end;
        const char last = end > 0 ? line[end - 1] : '\0';
        const bool value_end = (last >= '0' && last <= '9') || last == '"' || last == 'e' || last == 'l';
        if (nl != std::string_view::npos && value_end &&
            key_line(text.substr(nl + 1, text.find('\n', nl + 1) - nl - 1))) {
            out.append(line.substr(0, end));
            out += ',';
            out.append(line.substr(end));
        } else {
            out.append(line);
        }
        if (nl == std::string_view::npos) break;
        out += '\n';
        pos = nl + 1;
    }
    return out;
}

NcclRasReport parse_ras_json(std::string_view text) {
    NcclRasReport r;
    r.format = "json";
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) doc = json::parse(repair_ras_json(text), nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("communicators")) {
        r.outcome = "parse_error";
        r.detail = doc.is_discarded() ? "invalid JSON (also after the 2.28.7/2.28.9 comma repair)"
                                      : "JSON without a communicators array";
        r.partial = doc.is_discarded();
        return r;
    }
    r.outcome = "ok";
    r.nccl_version = str_of(doc, "nccl_version");
    r.communicators_count = static_cast<int>(int_of(doc, "communicators_count"));
    if (auto ras = doc.find("ras"); ras != doc.end() && ras->is_object()) {
        if (auto t = ras->find("collection_time_sec"); t != ras->end() && t->is_number())
            r.collection_seconds = t->get<double>();
        r.timeouts = static_cast<int>(int_of(*ras, "timeouts_count"));
    }
    if (doc["communicators"].is_array())
        for (const auto& c : doc["communicators"])
            if (c.is_object()) r.communicators.push_back(read_comm(c, r));
    return r;
}

std::vector<NcclRasEvent> take_monitor_events(std::string& buffer, int& garbage) {
    std::vector<NcclRasEvent> events;
    std::size_t pos = 0;
    while (true) {
        const std::size_t start = buffer.find_first_not_of(" \t\r\n", pos);
        if (start == std::string::npos) {
            pos = buffer.size();
            break;
        }
        if (buffer[start] == '{') {
            const std::size_t end = object_end(buffer, start);
            if (end == std::string::npos) {
                pos = start;
                break;
            }
            NcclRasEvent e;
            const json o = json::parse(buffer.begin() + static_cast<std::ptrdiff_t>(start),
                                       buffer.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
            if (!o.is_discarded() && json_event(o, e))
                events.push_back(std::move(e));
            else
                ++garbage;
            pos = end;
            continue;
        }
        const std::size_t nl = buffer.find('\n', start);
        if (nl == std::string::npos) {
            pos = start;
            break;
        }
        std::string line = buffer.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        NcclRasEvent e;
        if (text_event(line, e))
            events.push_back(std::move(e));
        else
            ++garbage;
        pos = nl + 1;
    }
    buffer.erase(0, pos);
    // An event that never completes (no newline, no closing brace) must not grow the helper without
    // bound, nor be rescanned from its start on every read.
    if (buffer.size() > kMaxPendingEvent) {
        buffer.clear();
        ++garbage;
    }
    return events;
}

}  // namespace stallscope::nccl
