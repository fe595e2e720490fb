#include "libstallscope/job/verdict_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "libstallscope/job/json_bounds.h"
#include "libstallscope/model/json_fields.h"
#include "libstallscope/timeline/documents.h"

namespace stallscope {
namespace {

using json_fields::Reader;

int clamped_int(const Reader& in, const char* key, int fallback) {
    return static_cast<int>(std::clamp<std::int64_t>(in.integer(key).value_or(fallback), 0, 1 << 30));
}

double time_of(const Reader& in, const char* key) {
    const std::string text = in.string(key);
    if (text.empty()) return 0;
    if (auto t = parse_rfc3339(text)) return *t;
    in.problems.push_back(in.where + "." + key + ": not an RFC 3339 time");
    return 0;
}

Evidence evidence_from(const Reader& in, const char* key) {
    Evidence out;
    const Json* v = in.find(key);
    if (!v) return out;
    if (!v->is_object()) {
        in.wrong_type(key, "an object");
        return out;
    }
    for (const auto& [name, value] : v->items()) {
        if (value.is_number())
            out[name] = value.get<double>();
        else if (value.is_string())
            out[name] = value.get<std::string>();
    }
    return out;
}

// The top-level members read below; the others (inventory, allocated GPUs, the timeline's name) are
// checked against the bounds but never built.
bool read_by_the_merge(std::string_view key) {
    static constexpr std::string_view kRead[] = {"schema",   "host",    "step_id",  "job_id",    "user",
                                                 "job_name", "verdict", "warnings", "node_stats"};
    return std::find(std::begin(kRead), std::end(kRead), key) != std::end(kRead);
}

}  // namespace

StepVerdict step_verdict_from_json(const Json& object, std::vector<std::string>& problems) {
    const Reader in{object, problems, "verdict"};
    StepVerdict v;
    v.label = in.string("label");
    if (v.label != kLabelFast && v.label != kLabelSlow && v.label != kLabelFailRisk) v.label = kLabelUnknown;
    v.confidence = std::clamp(in.number("confidence").value_or(0), 0.0, 1.0);
    v.reasons = in.objects<ReasonSummary>("reasons", [](const Reader& r) {
        ReasonSummary s;
        s.reason.code = r.string("code");
        s.reason.category = r.string("category");
        s.reason.severity = r.string("severity");
        s.reason.label = r.string("label");
        s.reason.subject = r.string("subject");
        s.reason.message = r.string("message");
        s.reason.evidence = evidence_from(r, "evidence");
        s.reason.first_seen = time_of(r, "first_seen");
        s.worst_evidence = evidence_from(r, "worst_evidence");
        s.last_seen = time_of(r, "last_seen");
        s.samples = clamped_int(r, "samples", 0);
        s.duration_seconds = std::max(0.0, r.number("duration_seconds").value_or(0));
        s.share = std::clamp(r.number("share").value_or(0), 0.0, 1.0);
        return s;
    });
    v.bottleneck_hint = in.string("bottleneck_hint");
    if (v.bottleneck_hint.empty()) v.bottleneck_hint = "unknown";
    v.unknown_reasons = in.strings("unknown_reasons");
    v.worst_gpu = in.string("worst_gpu");
    v.worst_port = in.string("worst_port");
    v.worst_interface = in.string("worst_interface");
    v.samples = clamped_int(in, "samples", 0);
    // A verdict of no samples has no time span: the helper writes null start and end for it, and a file
    // that says 0 samples with times (hand-edited, corrupt) must not give the merge a duration the
    // verdict's own JSON does not carry.
    if (v.samples > 0) {
        v.start_time = time_of(in, "start");
        v.end_time = time_of(in, "end");
    }
    return v;
}

bool read_small_regular_file(const std::string& path, std::size_t max_bytes, std::string& text,
                             std::string& error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        error = path + ": " + (errno == ELOOP ? "a symbolic link, not read" : std::strerror(errno));
        return false;
    }
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0;
    if (!ok)
        error = path + ": " + std::strerror(errno);
    else if (!S_ISREG(st.st_mode))
        ok = false, error = path + ": not a regular file, not read";
    else if (static_cast<std::size_t>(st.st_size) > max_bytes)
        ok = false, error = path + ": " + std::to_string(st.st_size) + " bytes, over the " +
                            std::to_string(max_bytes) + "-byte limit; not read";
    if (ok) {
        // Read at most one byte past the limit: a file that grew after fstat is still refused. The buffer
        // starts at the size fstat saw (plus the byte that tells a file that grew) and grows only if the
        // file did: a 4 MiB buffer cleared for each 10 KB verdict file was a third of a big job's merge.
        const std::size_t limit = max_bytes + 1;
        text.resize(std::min(limit, std::max<std::size_t>(static_cast<std::size_t>(st.st_size) + 1, 4096)));
        std::size_t got = 0;
        while (got < limit) {
            if (got == text.size()) text.resize(std::min(limit, text.size() * 2));
            const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                ok = false, error = path + ": " + std::strerror(errno);
                break;
            }
            if (n == 0) break;
            got += static_cast<std::size_t>(n);
        }
        text.resize(got);
        if (ok && got > max_bytes) ok = false, error = path + ": grew past the size limit; not read";
    }
    ::close(fd);
    return ok;
}

bool read_verdict_file(const std::string& path, VerdictFile& out, std::string& error) {
    std::string text;
    if (!read_small_regular_file(path, kMaxVerdictFileBytes, text, error)) return false;
    std::string why;
    Json doc;
    if (!parse_within_json_bounds(text, verdict_file_bounds(), read_by_the_merge, doc, why)) {
        error = path + ": " + why + "; not read (a verdict file from a job is bounded)";
        return false;
    }
    text = std::string();  // the document is built: the text goes before anything else is allocated
    if (!doc.is_object()) {
        error = path + ": not a valid JSON object (truncated or corrupt); ignored";
        return false;
    }
    std::vector<std::string> problems;
    const Reader in{doc, problems, ""};
    if (in.string("schema") != kVerdictSchema) {
        error = path + ": schema is not " + std::string(kVerdictSchema) + "; ignored";
        return false;
    }
    const Json* verdict = in.find("verdict");
    if (!verdict || !verdict->is_object()) {
        error = path + ": no verdict object; ignored";
        return false;
    }
    out.host = in.string("host");
    out.step_id = in.string("step_id");
    out.job_id = in.string("job_id");
    out.user = in.string("user");
    out.job_name = in.string("job_name");
    out.verdict = step_verdict_from_json(*verdict, problems);
    out.warnings = in.strings("warnings");
    if (const Json* stats = in.find("node_stats")) {
        if (stats->is_object())
            out.stats = node_stats_from_json(*stats, problems);
        else
            in.wrong_type("node_stats", "an object");
    }
    for (auto& p : problems) out.problems.push_back(path + ": " + p);
    return true;
}

}  // namespace stallscope
