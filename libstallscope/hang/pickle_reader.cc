// Opcode meanings: CPython Lib/pickletools.py (the reference table of the format) and
// torch/csrc/jit/serialization/pickler.cpp for what the jit pickler emits.
#include "libstallscope/hang/pickle_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <unordered_map>

namespace stallscope {
namespace {

// A failure inside the parser: caught in parse_pickle, never escapes it.
struct PickleError {
    std::string message;
};

// The jit pickler's helpers that only re-tag a container (torch/jit/_pickle.py): their first argument is
// the value itself, so reading it as that value loses nothing a summary needs.
bool is_identity_global(std::string_view name) {
    static constexpr std::string_view kNames[] = {
        "torch.jit._pickle.build_intlist",     "torch.jit._pickle.build_doublelist",
        "torch.jit._pickle.build_boollist",    "torch.jit._pickle.build_tensorlist",
        "torch.jit._pickle.build_genericlist", "torch.jit._pickle.restore_type_tag",
    };
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

class Unpickler {
  public:
    Unpickler(std::string_view in, PickleDocument& doc, const PickleLimits& limits)
        : in_(in), doc_(doc), limits_(limits) {}

    void run() {
        if (in_.size() > limits_.max_input_bytes) fail("input larger than the limit");
        while (true) {
            const std::size_t at = pos_;
            const auto op = static_cast<unsigned char>(take(1)[0]);
            if (op == '.') {  // STOP
                if (stack_.size() != 1 || !marks_.empty()) fail_at(at, "STOP with an unbalanced stack");
                doc_.root = stack_.back();
                return;
            }
            step(op, at);
        }
    }

  private:
    [[noreturn]] void fail(const std::string& what) { throw PickleError{what}; }
    [[noreturn]] void fail_at(std::size_t at, const std::string& what) {
        throw PickleError{what + " at offset " + std::to_string(at)};
    }

    std::string_view take(std::size_t n) {
        if (in_.size() - pos_ < n) fail("truncated at offset " + std::to_string(pos_));
        const std::string_view s = in_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    std::uint64_t take_le(std::size_t n) {
        const std::string_view s = take(n);
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(static_cast<unsigned char>(s[i])) << (8 * i);
        return v;
    }

    std::uint32_t add(PickleValue&& v) {
        if (doc_.values.size() >= limits_.max_values) fail("more values than the limit");
        text_bytes_ += v.text.size();
        if (text_bytes_ > limits_.max_text_bytes) fail("more text than the limit");
        v.subtree_text = v.text.size();
        doc_.values.push_back(std::move(v));
        return static_cast<std::uint32_t>(doc_.values.size() - 1);
    }
    void push_leaf(PickleKind kind) {
        PickleValue v;
        v.kind = kind;
        stack_.push_back(add(std::move(v)));
    }
    void push_int(std::int64_t i) {
        PickleValue v;
        v.kind = PickleKind::integer;
        v.integer = i;
        stack_.push_back(add(std::move(v)));
    }
    void push_text(std::string_view s) {
        PickleValue v;
        v.kind = PickleKind::text;
        v.text.assign(s);
        stack_.push_back(add(std::move(v)));
    }

    std::uint32_t pop() {
        if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
            fail("pop from an empty stack");
        const std::uint32_t v = stack_.back();
        stack_.pop_back();
        return v;
    }
    std::uint32_t top() {
        if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("empty stack");
        return stack_.back();
    }
    // The values pushed since the last MARK, removed from the stack (the mark too).
    std::vector<std::uint32_t> pop_mark() {
        if (marks_.empty()) fail("no MARK on the stack");
        const std::size_t from = marks_.back();
        marks_.pop_back();
        std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
        stack_.resize(from);
        return items;
    }

    // Puts `child` into the container `parent`; the container's height and subtree sizes follow.
    void adopt(std::uint32_t parent, std::uint32_t child) {
        PickleValue& p = doc_.values[parent];
        const PickleValue& c = doc_.values[child];
        const unsigned height = c.height + 1u;
        if (height > std::min(limits_.max_height, 255u)) fail("nesting deeper than the limit");
        p.height = static_cast<std::uint8_t>(std::max<unsigned>(p.height, height));
        p.subtree_values += c.subtree_values;
        p.subtree_text += c.subtree_text;
        p.items.push_back(child);
    }
    std::uint32_t container(PickleKind kind, const std::vector<std::uint32_t>& items) {
        PickleValue v;
        v.kind = kind;
        const std::uint32_t index = add(std::move(v));
        for (const auto item : items) adopt(index, item);
        return index;
    }
    void require(std::uint32_t index, PickleKind kind, const char* op) {
        if (doc_.values[index].kind != kind) fail(std::string(op) + " on a value of the wrong type");
    }

    // A memo reference: a copy of the value (a tree, never a cycle), charged against the limits first.
    std::uint32_t copy(std::uint32_t from) {
        const PickleValue& src = doc_.values[from];
        if (doc_.values.size() + src.subtree_values > limits_.max_values)
            fail("memo copies past the value limit");
        if (text_bytes_ + src.subtree_text > limits_.max_text_bytes) fail("memo copies past the text limit");
        return copy_unchecked(from);
    }
    std::uint32_t copy_unchecked(std::uint32_t from) {
        PickleValue v = doc_.values[from];  // items still name the source's children
        std::vector<std::uint32_t> children;
        children.swap(v.items);
        v.subtree_values = 1;
        v.height = 0;
        const std::uint32_t index = add(std::move(v));
        // Recursion depth is bounded by max_height: every stored value respects it.
        for (const auto child : children) adopt(index, copy_unchecked(child));
        return index;
    }

    void memo_put(std::uint64_t key) {
        if (memo_.size() >= limits_.max_values && !memo_.count(key)) fail("memo larger than the limit");
        memo_[key] = top();
    }
    void memo_get(std::uint64_t key, std::size_t at) {
        const auto it = memo_.find(key);
        if (it == memo_.end()) fail_at(at, "memo reference to nothing");
        stack_.push_back(copy(it->second));
    }

    std::int64_t read_long(std::size_t n, std::size_t at) {
        if (n > 8) fail_at(at, "integer wider than 64 bits");
        if (n == 0) return 0;
        std::uint64_t v = take_le(n);
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);  // sign-extend
        return static_cast<std::int64_t>(v);
    }

    void step(unsigned char op, std::size_t at) {
        if (stack_.size() > limits_.max_values) fail("stack larger than the limit");
        switch (op) {
            case 0x80:  // PROTO
                take(1);
                break;
            case 0x95:  // FRAME: a length prefix only; the opcodes inside are read as they come
                take(8);
                break;
            case '(':  // MARK
                if (marks_.size() >= limits_.max_values) fail("too many MARKs");
                marks_.push_back(stack_.size());
                break;
            case '}':  // EMPTY_DICT
                push_leaf(PickleKind::dict);
                break;
            case ']':  // EMPTY_LIST
                push_leaf(PickleKind::list);
                break;
            case ')':  // EMPTY_TUPLE
                push_leaf(PickleKind::tuple);
                break;
            case 'N':
                push_leaf(PickleKind::none);
                break;
            case 0x88:    // NEWTRUE
            case 0x89: {  // NEWFALSE
                PickleValue v;
                v.kind = PickleKind::boolean;
                v.boolean = op == 0x88;
                stack_.push_back(add(std::move(v)));
                break;
            }
            case 'K':  // BININT1
                push_int(static_cast<std::int64_t>(take_le(1)));
                break;
            case 'M':  // BININT2
                push_int(static_cast<std::int64_t>(take_le(2)));
                break;
            case 'J':  // BININT: signed 32-bit
                push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(take_le(4))));
                break;
            case 0x8a:  // LONG1
                push_int(read_long(take_le(1), at));
                break;
            case 0x8b:  // LONG4
                push_int(read_long(take_le(4), at));
                break;
            case 'G': {  // BINFLOAT: big-endian IEEE 754 double
                const std::string_view s = take(8);
                std::uint64_t bits = 0;
                for (const char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
                PickleValue v;
                v.kind = PickleKind::real;
                std::memcpy(&v.real, &bits, sizeof bits);
                stack_.push_back(add(std::move(v)));
                break;
            }
            case 0x8c:  // SHORT_BINUNICODE
            case 'C':   // SHORT_BINBYTES
                push_text(take(take_le(1)));
                break;
            case 'X':  // BINUNICODE
            case 'B':  // BINBYTES
                push_text(take(take_le(4)));
                break;
            case 0x8d:  // BINUNICODE8
            case 0x8e:  // BINBYTES8
                push_text(take(take_le(8)));
                break;
            case 0x85:  // TUPLE1..3
            case 0x86:
            case 0x87: {
                const std::size_t n = op - 0x84u;
                std::vector<std::uint32_t> items(n);
                for (std::size_t i = n; i-- > 0;) items[i] = pop();
                stack_.push_back(container(PickleKind::tuple, items));
                break;
            }
            case 't':  // TUPLE
                stack_.push_back(container(PickleKind::tuple, pop_mark()));
                break;
            case 'l':  // LIST
                stack_.push_back(container(PickleKind::list, pop_mark()));
                break;
            case 'd': {  // DICT
                const auto items = pop_mark();
                if (items.size() % 2) fail_at(at, "DICT with a key and no value");
                stack_.push_back(container(PickleKind::dict, items));
                break;
            }
            case 'a': {  // APPEND
                const std::uint32_t item = pop();
                const std::uint32_t list = top();
                require(list, PickleKind::list, "APPEND");
                adopt(list, item);
                break;
            }
            case 'e': {  // APPENDS
                const auto items = pop_mark();
                const std::uint32_t list = top();
                require(list, PickleKind::list, "APPENDS");
                for (const auto item : items) adopt(list, item);
                break;
            }
            case 's': {  // SETITEM
                const std::uint32_t value = pop();
                const std::uint32_t key = pop();
                const std::uint32_t dict = top();
                require(dict, PickleKind::dict, "SETITEM");
                adopt(dict, key);
                adopt(dict, value);
                break;
            }
            case 'u': {  // SETITEMS
                const auto items = pop_mark();
                if (items.size() % 2) fail_at(at, "SETITEMS with a key and no value");
                const std::uint32_t dict = top();
                require(dict, PickleKind::dict, "SETITEMS");
                for (const auto item : items) adopt(dict, item);
                break;
            }
            case 'q':  // BINPUT
                memo_put(take_le(1));
                break;
            case 'r':  // LONG_BINPUT
                memo_put(take_le(4));
                break;
            case 0x94:  // MEMOIZE
                memo_put(memo_.size());
                break;
            case 'h':  // BINGET
                memo_get(take_le(1), at);
                break;
            case 'j':  // LONG_BINGET
                memo_get(take_le(4), at);
                break;
            case '0':  // POP
                if (!marks_.empty() && stack_.size() == marks_.back())
                    marks_.pop_back();  // POP of a MARK, as CPython does
                else
                    pop();
                break;
            case '1':  // POP_MARK
                pop_mark();
                break;
            case 'c': {  // GLOBAL "module\nname\n"
                const std::size_t module_end = in_.find('\n', pos_);
                if (module_end == std::string_view::npos) fail_at(at, "GLOBAL without a module line");
                const std::size_t name_end = in_.find('\n', module_end + 1);
                if (name_end == std::string_view::npos) fail_at(at, "GLOBAL without a name line");
                std::string name(in_.substr(pos_, module_end - pos_));
                name += '.';
                name += in_.substr(module_end + 1, name_end - module_end - 1);
                pos_ = name_end + 1;
                push_global(std::move(name), at);
                break;
            }
            case 0x93: {  // STACK_GLOBAL
                const std::uint32_t name = pop();
                const std::uint32_t module = pop();
                require(name, PickleKind::text, "STACK_GLOBAL");
                require(module, PickleKind::text, "STACK_GLOBAL");
                push_global(doc_.values[module].text + "." + doc_.values[name].text, at);
                break;
            }
            case 'R': {  // REDUCE: only the identity helpers (see is_identity_global)
                const std::uint32_t args = pop();
                const std::uint32_t callable = pop();
                require(callable, PickleKind::global, "REDUCE");
                require(args, PickleKind::tuple, "REDUCE");
                if (doc_.values[args].items.empty()) fail_at(at, "REDUCE without arguments");
                stack_.push_back(doc_.values[args].items.front());
                break;
            }
            default: {
                static constexpr char kHex[] = "0123456789abcdef";
                fail_at(at, std::string("opcode 0x") + kHex[op >> 4] + kHex[op & 15] +
                                " outside the flight recorder's pickle subset");
            }
        }
    }

    void push_global(std::string name, std::size_t at) {
        if (!is_identity_global(name)) fail_at(at, "global '" + name.substr(0, 80) + "' refused");
        PickleValue v;
        v.kind = PickleKind::global;
        v.text = std::move(name);
        stack_.push_back(add(std::move(v)));
    }

    std::string_view in_;
    std::size_t pos_ = 0;
    PickleDocument& doc_;
    const PickleLimits& limits_;
    std::size_t text_bytes_ = 0;
    std::vector<std::uint32_t> stack_;
    std::vector<std::size_t> marks_;
    std::unordered_map<std::uint64_t, std::uint32_t> memo_;
};

void append_repr(const PickleDocument& doc, std::uint32_t index, std::string& out, std::size_t max_chars) {
    if (out.size() >= max_chars) return;
    const PickleValue& v = doc.values[index];
    switch (v.kind) {
        case PickleKind::none:
            out += "None";
            break;
        case PickleKind::boolean:
            out += v.boolean ? "True" : "False";
            break;
        case PickleKind::integer:
            out += std::to_string(v.integer);
            break;
        case PickleKind::real: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g", v.real);
            out += buf;
            break;
        }
        case PickleKind::text:
        case PickleKind::global:
            out += v.text.substr(0, max_chars);
            break;
        case PickleKind::list:
        case PickleKind::tuple:
        case PickleKind::dict: {
            const bool dict = v.kind == PickleKind::dict;
            out += v.kind == PickleKind::list ? '[' : dict ? '{' : '(';
            for (std::size_t i = 0; i < v.items.size() && out.size() < max_chars; ++i) {
                if (i) out += dict && i % 2 ? ": " : ", ";
                append_repr(doc, v.items[i], out, max_chars);
            }
            out += v.kind == PickleKind::list ? ']' : dict ? '}' : ')';
            break;
        }
    }
}

}  // namespace

std::size_t PickleRef::size() const {
    if (!doc_) return 0;
    const PickleValue& v = value();
    if (v.kind == PickleKind::dict) return v.items.size() / 2;
    return is_sequence() ? v.items.size() : 0;
}

PickleRef PickleRef::at(std::size_t i) const {
    return is_sequence() && i < value().items.size() ? PickleRef(doc_, value().items[i]) : PickleRef();
}
PickleRef PickleRef::key_at(std::size_t i) const {
    return is_dict() && i < size() ? PickleRef(doc_, value().items[2 * i]) : PickleRef();
}
PickleRef PickleRef::value_at(std::size_t i) const {
    return is_dict() && i < size() ? PickleRef(doc_, value().items[2 * i + 1]) : PickleRef();
}

PickleRef PickleRef::get(std::string_view key) const {
    if (!is_dict()) return {};
    PickleRef found;
    for (std::size_t i = 0; i < size(); ++i)
        if (key_at(i).as_text() == key) found = value_at(i);
    return found;
}

std::optional<std::int64_t> PickleRef::as_int() const {
    if (kind() == PickleKind::integer) return value().integer;
    if (kind() == PickleKind::boolean) return value().boolean ? 1 : 0;
    return std::nullopt;
}
std::optional<double> PickleRef::as_number() const {
    if (kind() == PickleKind::integer) return static_cast<double>(value().integer);
    if (kind() == PickleKind::real) return value().real;
    return std::nullopt;
}
std::optional<bool> PickleRef::as_bool() const {
    if (kind() == PickleKind::boolean) return value().boolean;
    return std::nullopt;
}
std::optional<std::string_view> PickleRef::as_text() const {
    if (kind() == PickleKind::text) return std::string_view(value().text);
    return std::nullopt;
}

std::string PickleRef::repr(std::size_t max_chars) const {
    std::string out;
    if (doc_) append_repr(*doc_, index_, out, max_chars);
    if (out.size() > max_chars) out.resize(max_chars);
    return out;
}

bool parse_pickle(std::string_view bytes, PickleDocument& out, std::string& error,
                  const PickleLimits& limits) noexcept {
    out = PickleDocument{};
    try {
        Unpickler(bytes, out, limits).run();
        return true;
    } catch (const PickleError& e) {
        error = "pickle: " + e.message;
    } catch (const std::exception& e) {  // bad_alloc below the limits: still an answer, not a crash
        error = std::string("pickle: ") + e.what();
    }
    out = PickleDocument{};
    return false;
}

}  // namespace stallscope
