#include "libstallscope/model/json_fields.h"

namespace stallscope::json_fields {

const Json* Reader::find(const char* key) const {
    if (!object.is_object()) return nullptr;
    // From the item after the last match, wrapping around: still a full search when the key is absent
    // or out of order, one comparison when it is where the writer put it.
    // ordered_map hides the vector's operator[] behind its own (by key): index the vector directly.
    const Json::object_t::Container& items = object.get_ref<const Json::object_t&>();
    const std::size_t n = items.size();
    const std::string_view wanted(key);
    for (std::size_t k = 0, i = next < n ? next : 0; k < n; ++k, i = i + 1 < n ? i + 1 : 0) {
        if (items[i].first != wanted) continue;
        next = i + 1;
        return items[i].second.is_null() ? nullptr : &items[i].second;
    }
    return nullptr;
}

void Reader::wrong_type(const char* key, const char* expected) const {
    problems.push_back((where.empty() ? std::string() : where + ".") + key + ": expected " + expected);
}

std::optional<std::uint64_t> Reader::u64(const char* key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    if (v->is_number_integer() && v->get<std::int64_t>() >= 0) return v->get<std::uint64_t>();
    wrong_type(key, "an unsigned integer");
    return std::nullopt;
}

std::optional<double> Reader::number(const char* key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_number()) return v->get<double>();
    wrong_type(key, "a number");
    return std::nullopt;
}

std::optional<std::int64_t> Reader::integer(const char* key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_number_integer()) return v->get<std::int64_t>();
    wrong_type(key, "an integer");
    return std::nullopt;
}

std::string Reader::string(const char* key) const {
    const Json* v = find(key);
    if (!v) return {};
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number_integer()) return std::to_string(v->get<std::int64_t>());  // "job_id": 42
    wrong_type(key, "a string");
    return {};
}

std::vector<std::string> Reader::strings(const char* key) const {
    std::vector<std::string> out;
    const Json* v = find(key);
    if (!v) return out;
    if (!v->is_array()) {
        wrong_type(key, "an array of strings");
        return out;
    }
    for (const auto& item : *v) {
        if (item.is_string())
            out.push_back(item.get<std::string>());
        else if (item.is_number_integer())
            out.push_back(std::to_string(item.get<std::int64_t>()));
    }
    return out;
}

}  // namespace stallscope::json_fields
