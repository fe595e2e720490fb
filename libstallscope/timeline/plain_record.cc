#include "libstallscope/timeline/plain_record.h"

namespace stallscope {
namespace {

using simdjson::SUCCESS;

bool read_integers(simdjson::ondemand::value value, std::vector<std::int64_t>& out) {
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS) return false;
    for (auto element : list) {
        std::int64_t n = 0;
        if (element.get_int64().get(n) != SUCCESS) return false;
        out.push_back(n);
    }
    return true;
}

// Whether get_number() read `number` from `token` as simdjson 3.0.1 does a decimal of 19 significant
// digits or more: 0 where a digit other than 0 comes before any exponent.
bool misread_zero(std::string_view token, double number) {
    if (number != 0) return false;
    for (const char c : token) {
        if (c == 'e' || c == 'E') break;
        if (c >= '1' && c <= '9') return true;
    }
    return false;
}

// As the DOM's get_double reads a number element: an integer converted, a float as parsed. Through
// get_number, so an integer past 64 bits is refused here (the DOM decides what it is). But before
// simdjson 3.6.4 (Debian 12 ships 3.0.1) get_number() leaves the double of a decimal of 19 digits or
// more at 0 (simdjson issue #2099; found here by the `timeline` fuzz target): a 0 read from digits that
// say otherwise is refused too, for the DOM, which reads it right. (stallscope writes at most 17
// significant digits. get_double() is no way out: it reads -0.12345678901234567890123 as -4.8e-05.)
bool read_numbers(simdjson::ondemand::value value, std::vector<double>& out) {
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS) return false;
    for (auto element : list) {
        std::string_view token;
        simdjson::ondemand::number n;
        if (element.raw_json_token().get(token) != SUCCESS || element.get_number().get(n) != SUCCESS)
            return false;
        const double number = n.as_double();
        if (n.is_double() && misread_zero(token, number)) return false;
        out.push_back(number);
    }
    return true;
}

}  // namespace

bool read_plain_record(simdjson::ondemand::parser& parser, std::string_view text, std::size_t padding,
                       PlainRecord& out) {
    out.a.clear();
    out.g.clear();
    out.has_g = false;
    out.has_a = false;
    simdjson::ondemand::document doc;
    simdjson::ondemand::object object;
    if (parser.iterate(text.data(), text.size(), text.size() + padding).get(doc) != SUCCESS ||
        doc.get_object().get(object) != SUCCESS)
        return false;
    bool has_type = false, has_a = false;
    for (auto field : object) {
        std::string_view key;
        simdjson::ondemand::value value;
        if (field.unescaped_key().get(key) != SUCCESS || field.value().get(value) != SUCCESS) return false;
        if (key == "type" && !has_type) {
            std::string_view type;
            if (value.get_string().get(type) != SUCCESS || type != "sample") return false;
            has_type = true;
        } else if (key == "a" && !has_a) {
            if (!read_integers(value, out.a)) return false;
            has_a = true;
        } else if (key == "g" && !out.has_g) {
            if (!read_numbers(value, out.g)) return false;
            out.has_g = true;
        } else {
            return false;  // another key ("keys", "set", ...) or one repeated: the DOM's case
        }
    }
    // Nothing after the object: the document's iterator is past its last token (no at_end() in 3.0).
    out.has_a = has_a;
    return has_type && has_a && doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

bool dom_integers(simdjson::dom::array list, std::vector<std::int64_t>& out) {
    out.clear();
    for (simdjson::dom::element value : list) {
        std::int64_t n = 0;
        if (value.get_int64().get(n) != SUCCESS) return false;
        out.push_back(n);
    }
    return true;
}

bool dom_numbers(simdjson::dom::array list, std::vector<double>& out) {
    out.clear();
    for (simdjson::dom::element value : list) {
        double v = 0;
        if (value.get_double().get(v) != SUCCESS) return false;
        out.push_back(v);
    }
    return true;
}

}  // namespace stallscope
