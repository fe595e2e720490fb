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

// As the DOM's get_double reads a number element: an integer converted, a float as parsed. Through
// get_number, so an integer past 64 bits is refused here (the DOM decides what it is).
bool read_numbers(simdjson::ondemand::value value, std::vector<double>& out) {
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS) return false;
    for (auto element : list) {
        simdjson::ondemand::number n;
        if (element.get_number().get(n) != SUCCESS) return false;
        out.push_back(n.as_double());
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
