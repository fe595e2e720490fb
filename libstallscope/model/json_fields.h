// Small typed accessors shared by the JSON readers: each returns nullopt (and notes the key in
// `problems`) when the value has the wrong type, so bad timeline lines degrade instead of throwing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::json_fields {

// A measured value, or null: a missing counter is never written as 0 (the snapshot's value rule).
template <typename T>
Json or_null(const std::optional<T>& value) {
    return value ? Json(*value) : Json(nullptr);
}

// Objects built by appending. ordered_json's operator[] and its initializer-list constructor search the
// keys linearly on every insert, which makes building an object quadratic in its size (and an initializer
// list allocates a two-element array per pair); the writers' keys are unique by construction, so they
// append to the object's vector instead.
inline Json object_of(std::size_t size) {
    Json o = Json::object();
    o.get_ref<Json::object_t&>().reserve(size);
    return o;
}
inline void put(Json& object, std::string_view key, Json&& value) {
    object.get_ref<Json::object_t&>().emplace_back(std::string(key), std::move(value));
}

struct Reader {
    const Json& object;
    std::vector<std::string>& problems;
    std::string where;  // "gpus[3]" - prefix for problem messages
    // Where the last find() matched: readers ask for fields in the order the writers put them, so the
    // next key is almost always the next item (one comparison instead of a search per field).
    mutable std::size_t next = 0;

    const Json* find(const char* key) const;
    std::optional<std::uint64_t> u64(const char* key) const;
    std::optional<double> number(const char* key) const;
    std::optional<std::int64_t> integer(const char* key) const;
    std::string string(const char* key) const;
    std::vector<std::string> strings(const char* key) const;
    void wrong_type(const char* key, const char* expected) const;

    // An array of objects under `key`, each read by `read_one(const Reader&)` with `where` set to
    // "<where>.<key>[i]"; a non-array or a non-object item becomes a problem, not an exception.
    template <typename T, typename F>
    std::vector<T> objects(const char* key, F read_one) const {
        std::vector<T> out;
        const Json* v = find(key);
        if (!v) return out;
        if (!v->is_array()) {
            wrong_type(key, "an array");
            return out;
        }
        for (std::size_t i = 0; i < v->size(); ++i) {
            const Reader inner{(*v)[i], problems,
                               (where.empty() ? "" : where + ".") + key + "[" + std::to_string(i) + "]"};
            if (!(*v)[i].is_object()) {
                problems.push_back(inner.where + ": expected an object");
                continue;
            }
            out.push_back(read_one(inner));
        }
        return out;
    }
};

}  // namespace stallscope::json_fields
