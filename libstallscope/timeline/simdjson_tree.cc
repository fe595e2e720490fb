#include "libstallscope/timeline/simdjson_tree.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

namespace stallscope {
namespace {

// simdjson 4 added element_type::BIGINT: an integer beyond 64 bits kept as its digits, produced only when
// the parser is told to keep such numbers (ours is not: it fails with BIGINT_ERROR instead). Read as
// nlohmann's parser reads one: a double. simdjson 3 (Debian 12, 13) has no get_bigint(); the requires
// keeps this file building against both.
template <typename Element>
Json big_integer(const Element& e) {
    if constexpr (requires { e.get_bigint(); }) {
        std::string_view digits;
        if (e.get_bigint().get(digits) == simdjson::SUCCESS) {
            double v = 0;
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
            if (ec == std::errc() && end == digits.data() + digits.size()) return Json(v);
        }
    }
    return Json(nullptr);
}

}  // namespace

// Non-negative integers come back unsigned, as nlohmann's parser gives them.
Json to_tree(simdjson::dom::element e) {
    switch (e.type()) {
        case simdjson::dom::element_type::ARRAY: {
            Json a = Json::array();
            simdjson::dom::array array;
            if (e.get(array) == simdjson::SUCCESS)
                for (simdjson::dom::element child : array) a.push_back(to_tree(child));
            return a;
        }
        case simdjson::dom::element_type::OBJECT: {
            Json o = Json::object();
            simdjson::dom::object object;
            if (e.get(object) != simdjson::SUCCESS) return o;
            // Appended (ordered_json's operator[] searches the keys on every insert: quadratic in a
            // counter map's size), then checked for a repeated key, which a hand-edited file may hold:
            // that rare object is rebuilt with operator[], the last value winning, as nlohmann's parser
            // would.
            auto& items = o.get_ref<Json::object_t&>();
            items.reserve(object.size());
            for (simdjson::dom::key_value_pair field : object)
                items.emplace_back(std::string(field.key), to_tree(field.value));
            if (items.size() > 1) {
                thread_local std::vector<std::string_view> keys;  // reused: the children are done
                keys.clear();
                for (const auto& item : items) keys.push_back(item.first);
                std::sort(keys.begin(), keys.end());
                if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
                    Json unique = Json::object();
                    for (auto& item : items) unique[item.first] = std::move(item.second);
                    return unique;
                }
            }
            return o;
        }
        case simdjson::dom::element_type::INT64: {
            std::int64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return v >= 0 ? Json(static_cast<std::uint64_t>(v)) : Json(v);
        }
        case simdjson::dom::element_type::UINT64: {
            std::uint64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::DOUBLE: {
            double v = 0;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::STRING: {
            std::string_view v;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(std::string(v));
        }
        case simdjson::dom::element_type::BOOL: {
            bool v = false;
            if (e.get(v) != simdjson::SUCCESS) break;
            return Json(v);
        }
        case simdjson::dom::element_type::NULL_VALUE:
            break;
        default:  // BIGINT (simdjson 4), and whatever type a later release adds: never a crash
            return big_integer(e);
    }
    return Json(nullptr);
}

}  // namespace stallscope
