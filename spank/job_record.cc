#include "spank/job_record.h"

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "spank/escape.h"

namespace stallscope::spank {

namespace {

using Json = nlohmann::json;

struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Parses with a depth limit and refuses repeated keys (nlohmann keeps the last of two equal keys
// silently: a reader bug that let a string's content out must not pick which AdminComment we see).
Json parse_strict(std::string_view text) {
    std::vector<std::optional<std::set<std::string>>> open;  // one entry per open object (keys) or array
    auto callback = [&](int, Json::parse_event_t event, Json& parsed) {
        switch (event) {
            case Json::parse_event_t::object_start:
            case Json::parse_event_t::array_start:
                if (open.size() >= static_cast<std::size_t>(kJobRecordMaxDepth))
                    throw Refused("nested deeper than " + std::to_string(kJobRecordMaxDepth) + " levels");
                if (event == Json::parse_event_t::object_start)
                    open.emplace_back(std::set<std::string>{});
                else
                    open.emplace_back(std::nullopt);
                break;
            case Json::parse_event_t::object_end:
            case Json::parse_event_t::array_end:
                if (!open.empty()) open.pop_back();
                break;
            case Json::parse_event_t::key:
                if (open.empty() || !open.back() || !open.back()->insert(parsed.get<std::string>()).second)
                    throw Refused("a repeated key " + shown(parsed.get<std::string>(), 40));
                break;
            case Json::parse_event_t::value:
                break;
        }
        return true;
    };
    return Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
}

std::optional<std::uint64_t> decimal(std::string_view text) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// A job id as data_parser prints it: a plain number, or {"set": true, "infinite": false, "number": N}.
std::optional<std::uint64_t> job_id_of(const Json& record) {
    const auto it = record.find("job_id");
    if (it == record.end()) return std::nullopt;
    const Json* v = &*it;
    if (v->is_object()) {
        const auto set = v->find("set"), number = v->find("number");
        if (set == v->end() || !set->is_boolean() || !set->get<bool>() || number == v->end())
            return std::nullopt;
        v = &*number;
    }
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    if (v->is_number_integer() && v->get<std::int64_t>() >= 0)
        return static_cast<std::uint64_t>(v->get<std::int64_t>());
    return std::nullopt;
}

JobAdminComment refuse(std::string why) {
    JobAdminComment r;
    r.why = std::move(why);
    return r;
}

// The error text the reader put in "errors" (scontrol --json and stallscope-slurm-job both do).
std::string first_error(const Json& errors) {
    const Json& e = errors.front();
    for (const char* key : {"description", "error"}) {
        const auto it = e.is_object() ? e.find(key) : e.end();
        if (it != e.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
            return shown(it->get_ref<const std::string&>(), 200);
    }
    return "(no description)";
}

}  // namespace

JobAdminComment parse_job_record_json(std::string_view json, std::string_view job_id) {
    const std::optional<std::uint64_t> wanted = decimal(job_id);
    if (!wanted) return refuse("not a job id: " + shown(job_id, 40));
    if (json.size() >= kJobRecordCap)
        return refuse("the job record is " + std::to_string(json.size()) + " bytes or more (cap " +
                      std::to_string(kJobRecordCap) + ")");
    Json doc;
    try {
        doc = parse_strict(json);
    } catch (const Refused& e) {
        return refuse(std::string("the job record JSON is refused: ") + e.what());
    } catch (const std::exception& e) {
        return refuse("the job record is not JSON: " + shown(e.what(), 160));
    }
    if (!doc.is_object()) return refuse("the job record is not a JSON object");
    if (const auto errors = doc.find("errors"); errors != doc.end()) {
        if (!errors->is_array()) return refuse("the job record's \"errors\" is not an array");
        if (!errors->empty()) return refuse("the job reader reported: " + first_error(*errors));
    }
    const auto jobs = doc.find("jobs");
    if (jobs == doc.end() || !jobs->is_array()) return refuse("the job record has no \"jobs\" array");
    const Json* ours = nullptr;
    for (const Json& record : *jobs) {
        if (!record.is_object()) return refuse("a \"jobs\" entry is not an object");
        const std::optional<std::uint64_t> id = job_id_of(record);
        if (!id) return refuse("a \"jobs\" entry has no readable job_id");
        if (*id != *wanted) continue;  // another task of the same array
        if (ours) return refuse("two records claim job " + std::string(job_id));
        ours = &record;
    }
    if (!ours) return refuse("no record of job " + std::string(job_id));
    // The job-info form (every data_parser version, and our reader): "admin_comment". The slurmdb job
    // form nests it: "comment": {"administrator": ...}. Both present must agree.
    std::optional<const Json*> flat, nested;
    if (const auto it = ours->find("admin_comment"); it != ours->end()) flat = &*it;
    if (const auto it = ours->find("comment"); it != ours->end() && it->is_object())
        if (const auto admin = it->find("administrator"); admin != it->end()) nested = &*admin;
    if (!flat && !nested) return refuse("the record of job " + std::string(job_id) + " has no admin_comment");
    std::optional<std::string> value;
    for (const std::optional<const Json*>& field : {flat, nested}) {
        if (!field) continue;
        const Json& v = **field;
        if (!v.is_string() && !v.is_null()) return refuse("admin_comment is not a string");
        const std::string text = v.is_string() ? v.get<std::string>() : "";
        if (value && *value != text) return refuse("admin_comment and comment.administrator differ");
        value = text;
    }
    JobAdminComment r;
    r.state = value->empty() ? AdminCommentRead::absent : AdminCommentRead::present;
    r.value = *value;
    return r;
}

}  // namespace stallscope::spank
