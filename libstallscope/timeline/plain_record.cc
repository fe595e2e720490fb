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

// Digits of a number's mantissa (before any exponent).
std::size_t mantissa_digits(std::string_view token) {
    std::size_t digits = 0;
    for (const char c : token) {
        if (c == 'e' || c == 'E') break;
        digits += c >= '0' && c <= '9' ? 1 : 0;
    }
    return digits;
}

// As the DOM's get_double reads a number element: an integer converted from its 64-bit value, a float as
// parsed; an integer past 64 bits is refused here (the DOM decides what it is). A decimal of more than 19
// digits is refused too: the On Demand parser of simdjson 3.0.1 (Debian 12's) reads some of those wrong,
// where the DOM reads them right: get_number() gives 0 for them (simdjson issue #2099, fixed in 3.6.4)
// and get_double() gives 4.8e-05 for 0.12345678901234567890123 (found by the `timeline` fuzz target).
// stallscope writes at most 17 significant digits; such a number only comes from a hand-edited file.
bool read_numbers(simdjson::ondemand::value value, std::vector<double>& out) {
    using Type = simdjson::ondemand::number_type;
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS) return false;
    for (auto element : list) {
        Type type;
        if (element.get_number_type().get(type) != SUCCESS) return false;
        double number = 0;
        std::int64_t signed_value = 0;
        std::uint64_t unsigned_value = 0;
        std::string_view token;
        if (type == Type::floating_point_number) {
            if (element.raw_json_token().get(token) != SUCCESS || mantissa_digits(token) > 19 ||
                element.get_double().get(number) != SUCCESS)
                return false;
        } else if (type == Type::signed_integer) {
            if (element.get_int64().get(signed_value) != SUCCESS) return false;
            number = static_cast<double>(signed_value);
        } else {
            if (element.get_uint64().get(unsigned_value) != SUCCESS) return false;
            number = static_cast<double>(unsigned_value);
        }
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
