// A bounded reader for the subset of Python's pickle format that PyTorch's flight recorder writes
// (torch::jit::Pickler, protocol 2: dicts, lists, tuples, str, int, float, bool, None, memo references) and
// that Python's own pickle.dump writes for the same data at protocols 2-5 (FRAME, SHORT_BINUNICODE,
// MEMOIZE). It builds plain values and never calls anything: GLOBAL/REDUCE are accepted only for the
// jit pickler's own type-restoring helpers (torch.jit._pickle build_intlist, restore_type_tag, ...), whose
// result is their first argument; any other global, persistent id or object construction is an error.
//
// Bounded (PickleLimits): input bytes, values, text bytes, nesting height, stack. A memo reference
// (BINGET) copies the referenced value, and the copy counts against the same budgets, so no input can make
// the reader allocate more than the limits allow or build a cycle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

struct PickleLimits {
    std::size_t max_input_bytes = 64u << 20;
    std::size_t max_values = 1u << 20;       // every value, leaves included (about 90 bytes each)
    std::size_t max_text_bytes = 64u << 20;  // str/bytes contents, memo copies included
    unsigned max_height = 64;                // containers inside containers
};

enum class PickleKind : std::uint8_t { none, boolean, integer, real, text, list, tuple, dict, global };

struct PickleValue {
    PickleKind kind = PickleKind::none;
    std::uint8_t height = 0;  // 0 for a leaf, 1 + the highest child for a container
    bool boolean = false;
    std::int64_t integer = 0;
    double real = 0;
    std::string text;                  // str, bytes, or "module.name" for a global
    std::vector<std::uint32_t> items;  // list/tuple items; a dict's keys and values, alternating
    std::size_t subtree_values = 1;    // this value and everything below it (the cost of a copy)
    std::size_t subtree_text = 0;
};

// Every value of one pickle in one array (no recursive destruction of a deep tree); root is the result.
struct PickleDocument {
    std::vector<PickleValue> values;
    std::uint32_t root = 0;
};

// A read-only handle on one value; a missing value (absent key, wrong index) is a null handle whose
// accessors all answer "not that type".
class PickleRef {
  public:
    PickleRef() = default;
    PickleRef(const PickleDocument* doc, std::uint32_t index) : doc_(doc), index_(index) {}
    explicit operator bool() const { return doc_ != nullptr; }
    PickleKind kind() const { return doc_ ? value().kind : PickleKind::none; }
    bool is_dict() const { return kind() == PickleKind::dict; }
    bool is_sequence() const { return kind() == PickleKind::list || kind() == PickleKind::tuple; }
    bool is_none() const { return doc_ && value().kind == PickleKind::none; }
    // Items of a list/tuple; entries (key, value pairs) of a dict.
    std::size_t size() const;
    PickleRef at(std::size_t i) const;           // list/tuple item
    PickleRef key_at(std::size_t i) const;       // dict key of entry i
    PickleRef value_at(std::size_t i) const;     // dict value of entry i
    PickleRef get(std::string_view key) const;   // dict value under a str key (the last one wins)
    std::optional<std::int64_t> as_int() const;  // int, or bool as 0/1
    std::optional<double> as_number() const;     // int or float
    std::optional<bool> as_bool() const;
    std::optional<std::string_view> as_text() const;
    // A short text form for messages and summaries ("[[1259621]]", "'Float'"), at most max_chars.
    std::string repr(std::size_t max_chars = 200) const;

  private:
    const PickleValue& value() const { return doc_->values[index_]; }
    const PickleDocument* doc_ = nullptr;
    std::uint32_t index_ = 0;
};

inline PickleRef root_of(const PickleDocument& doc) {
    return doc.values.empty() ? PickleRef() : PickleRef(&doc, doc.root);
}

// Parses one pickle (up to its STOP opcode; bytes after it are ignored). Never throws: false and a
// one-line error naming the offset on anything outside the subset, truncated input or a limit reached.
bool parse_pickle(std::string_view bytes, PickleDocument& out, std::string& error,
                  const PickleLimits& limits = {}) noexcept;

}  // namespace stallscope
