#include "libstallscope/job/json_bounds.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace stallscope {
namespace {

using Sax = Json;  // the SAX events' types (those of the document parse_within_json_bounds builds)

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

// The bounds first (each event counted, a bound over stops the parse), then the document: what
// nlohmann's own DOM parser builds, less the top-level members `keep` refuses (counted, not kept).
class BoundedDocument {
  public:
    BoundedDocument(const JsonBounds& bounds, const std::function<bool(std::string_view)>& keep, Json& root)
        : counter(bounds), keep_(keep), root_(root) {}
    BoundsCounter counter;

    bool null() { return counter.null() && add(nullptr); }
    bool boolean(bool v) { return counter.boolean(v) && add(v); }
    bool number_integer(Sax::number_integer_t v) { return counter.number_integer(v) && add(v); }
    bool number_unsigned(Sax::number_unsigned_t v) { return counter.number_unsigned(v) && add(v); }
    bool number_float(Sax::number_float_t v, const Sax::string_t& s) {
        return counter.number_float(v, s) && add(v);
    }
    bool string(Sax::string_t& v) { return counter.string(v) && add(std::move(v)); }
    bool binary(Sax::binary_t& v) { return counter.binary(v) && add(Json::binary(std::move(v))); }
    bool start_object(std::size_t n) { return counter.start_object(n) && open(Json::object()); }
    bool start_array(std::size_t n) { return counter.start_array(n) && open(Json::array()); }
    bool end_object() { return counter.end_object() && close(); }
    bool end_array() { return counter.end_array() && close(); }
    bool key(Sax::string_t& name) {
        if (!counter.key(name)) return false;
        if (skipping_ > 0) return true;
        if (stack_.size() == 1 && !keep_(name)) {
            skip_next_ = true;  // this member's value: counted, not built
            return true;
        }
        // As operator[] (a repeated key: the first place, the last value), with the key moved in once:
        // operator[] copied it twice, a third of the parse's allocations.
        auto& members = stack_.back()->get_ref<Json::object_t&>();
        const auto same = std::find_if(members.begin(), members.end(),
                                       [&](const auto& member) { return member.first == name; });
        if (same != members.end()) {
            member_ = &same->second;
        } else {
            members.emplace_back(std::move(name), nullptr);
            member_ = &members.back().second;
        }
        return true;
    }
    bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
        return counter.parse_error(position, token, e);
    }

  private:
    // Where a value goes: the root, the end of the open array, or the member whose key came last.
    Json* place(Json&& value) {
        if (stack_.empty()) return &(root_ = std::move(value));
        if (stack_.back()->is_array()) {
            stack_.back()->push_back(std::move(value));
            return &stack_.back()->back();
        }
        *member_ = std::move(value);
        return member_;
    }
    bool add(Json&& value) {
        if (skipping_ == 0 && !skip_next_) place(std::move(value));
        skip_next_ = false;
        return true;
    }
    bool open(Json&& empty) {
        if (skipping_ > 0 || skip_next_) {
            ++skipping_, skip_next_ = false;
            return true;
        }
        stack_.push_back(place(std::move(empty)));
        return true;
    }
    bool close() {
        if (skipping_ > 0)
            --skipping_;
        else
            stack_.pop_back();
        return true;
    }

    const std::function<bool(std::string_view)>& keep_;
    Json& root_;
    std::vector<Json*> stack_;  // the open containers, outermost first
    Json* member_ = nullptr;
    bool skip_next_ = false;    // the next value belongs to a member not kept
    std::size_t skipping_ = 0;  // containers open inside a member not kept
};

}  // namespace

bool parse_within_json_bounds(std::string_view text, const JsonBounds& bounds,
                              const std::function<bool(std::string_view key)>& keep, Json& out,
                              std::string& why) {
    out = Json();
    BoundedDocument document(bounds, keep, out);
    const bool ok = Sax::sax_parse(text, &document, Sax::input_format_t::json, /*strict=*/true);
    if (!ok) why = document.counter.why.empty() ? "not valid JSON" : document.counter.why;
    return ok;
}

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

}  // namespace stallscope
