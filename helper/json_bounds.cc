#include "helper/json_bounds.h"

#include <nlohmann/json.hpp>

namespace stallscope::cli {
namespace {

using Sax = nlohmann::json;  // the SAX events' types only; no document is built

// Counts as the parser streams; returning false stops the parse at once.
class BoundsCounter {
  public:
    explicit BoundsCounter(const JsonBounds& bounds) : bounds_(bounds) {}
    std::string why;

    bool null() { return value(); }
    bool boolean(bool) { return value(); }
    bool number_integer(Sax::number_integer_t) { return value(); }
    bool number_unsigned(Sax::number_unsigned_t) { return value(); }
    bool number_float(Sax::number_float_t, const Sax::string_t&) { return value(); }
    bool string(Sax::string_t&) { return value(); }
    bool binary(Sax::binary_t&) { return value(); }
    bool start_object(std::size_t) { return open(false); }
    bool start_array(std::size_t) { return open(true); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(Sax::string_t& name) {
        // Paths are kept for the top levels only (the named caps are there), so a long key deep down
        // costs nothing.
        if (stack_.size() <= kNamedDepth) key_ = name;
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
        why = "not valid JSON (at byte " + std::to_string(position) + ")";
        return false;
    }

  private:
    static constexpr std::size_t kNamedDepth = 3;
    struct Frame {
        bool array;
        std::size_t members = 0, cap;
        const char* what;
        std::string path;
    };

    bool fail(std::string text) {
        why = std::move(text);
        return false;
    }

    // Every value, a container included, counts once in the file and once in its parent.
    bool value() {
        if (++values_ > bounds_.max_values)
            return fail("more than " + std::to_string(bounds_.max_values) + " JSON values");
        if (stack_.empty()) return true;
        Frame& parent = stack_.back();
        if (++parent.members <= parent.cap) return true;
        const std::string where = parent.path.empty() ? "a nested list" : parent.path;
        return fail(where + " holds more than " + std::to_string(parent.cap) + " " + parent.what);
    }

    bool open(bool array) {
        if (!value()) return false;
        if (stack_.size() >= bounds_.max_depth)
            return fail("nested deeper than " + std::to_string(bounds_.max_depth) + " levels");
        Frame f{array, 0, bounds_.max_members, "entries", {}};
        if (stack_.size() < kNamedDepth) {
            if (!stack_.empty()) {
                const Frame& parent = stack_.back();
                f.path =
                    parent.array ? parent.path + "[]" : (parent.path.empty() ? "" : parent.path + ".") + key_;
            }
            for (const auto& n : bounds_.named)
                if (n.path == f.path) f.cap = n.max_members, f.what = n.what;
        }
        stack_.push_back(std::move(f));
        return true;
    }

    bool close() {
        stack_.pop_back();
        return true;
    }

    const JsonBounds& bounds_;
    std::vector<Frame> stack_;
    std::string key_;
    std::size_t values_ = 0;
};

}  // namespace

const JsonBounds& verdict_file_bounds() {
    static const JsonBounds bounds{.named = {{"node_stats.gpus", 1024, "GPUs"},
                                             {"node_stats.ports", 4096, "ports"},
                                             {"verdict.reasons", 4096, "reasons"}}};
    return bounds;
}

bool within_json_bounds(std::string_view text, const JsonBounds& bounds, std::string& why) {
    BoundsCounter counter(bounds);
    const bool ok = Sax::sax_parse(text, &counter, Sax::input_format_t::json, /*strict=*/true);
    if (!ok) why = counter.why.empty() ? "not valid JSON" : counter.why;
    return ok;
}

}  // namespace stallscope::cli
