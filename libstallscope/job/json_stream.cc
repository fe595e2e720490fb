#include "libstallscope/job/json_stream.h"

#include <utility>

namespace stallscope {
namespace {

constexpr std::size_t kBlockBytes = 64 << 10;

std::string dump(const Json& value, int indent) {
    // replace: names and messages come from files the job wrote and may hold invalid UTF-8.
    return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

JsonStream::JsonStream(JsonSink sink, int indent) : sink_(std::move(sink)), indent_(indent) {}

void JsonStream::put(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kBlockBytes) {
        sink_(buffer_);
        buffer_.clear();
    }
}

void JsonStream::put_indent(std::size_t levels) {
    if (indent_ > 0) buffer_.append(levels * static_cast<std::size_t>(indent_), ' ');
}

// The separator before an entry and, in an object, its key: as nlohmann writes them ("{\n" + indent
// before the first entry, ",\n" + indent before the others; no whitespace when compact).
void JsonStream::start_entry(std::string_view key) {
    if (levels_.empty()) return;
    Level& level = levels_.back();
    if (!level.empty) put(",");
    level.empty = false;
    if (indent_ >= 0) put("\n");
    put_indent(levels_.size());
    if (!level.array) {
        put(dump(Json(std::string(key)), -1));
        put(indent_ >= 0 ? ": " : ":");
    }
}

// A value nested `levels_` deep: nlohmann's own text of it, every line after the first indented as
// deep as the value sits (a JSON string never holds a raw newline, so each '\n' starts a line).
void JsonStream::value(const Json& v) {
    scratch_ = dump(v, indent_);
    if (indent_ <= 0 || levels_.empty()) {
        put(scratch_);
        return;
    }
    const std::size_t depth = levels_.size() * static_cast<std::size_t>(indent_);
    std::size_t from = 0;
    for (std::size_t nl; (nl = scratch_.find('\n', from)) != std::string::npos; from = nl + 1) {
        buffer_.append(scratch_, from, nl + 1 - from);
        buffer_.append(depth, ' ');
    }
    put(std::string_view(scratch_).substr(from));
}

void JsonStream::open_object(std::string_view key) {
    start_entry(key);
    put("{");
    levels_.push_back({false});
}

void JsonStream::open_array(std::string_view key) {
    start_entry(key);
    put("[");
    levels_.push_back({true});
}

void JsonStream::close() {
    const Level level = levels_.back();
    levels_.pop_back();
    if (!level.empty && indent_ >= 0) {
        put("\n");
        put_indent(levels_.size());
    }
    put(level.array ? "]" : "}");
}

void JsonStream::member(std::string_view key, const Json& v) {
    start_entry(key);
    value(v);
}

void JsonStream::element(const Json& v) {
    start_entry({});
    value(v);
}

void JsonStream::finish() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
}

}  // namespace stallscope
