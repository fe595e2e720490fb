// Small typed accessors shared by the JSON readers: each returns nullopt (and notes the key in
// `problems`) when the value has the wrong type, so bad timeline lines degrade instead of throwing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::json_fields {

struct Reader {
    const Json& object;
    std::vector<std::string>& problems;
    std::string where;  // "gpus[3]" - prefix for problem messages

    const Json* find(const char* key) const;
    std::optional<std::uint64_t> u64(const char* key) const;
    std::optional<double> number(const char* key) const;
    std::optional<std::int64_t> integer(const char* key) const;
    std::string string(const char* key) const;
    std::vector<std::string> strings(const char* key) const;
    void wrong_type(const char* key, const char* expected) const;
};

}  // namespace stallscope::json_fields
