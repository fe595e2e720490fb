#include "libstallscope/sinks/exposition_writer.h"

#include <charconv>
#include <cmath>

#include "libstallscope/util/utf8.h"

namespace stallscope {

void append_escaped_label_value(std::string& out, std::string_view value) {
    const char* const end = value.data() + value.size();
    for (const char* p = value.data(); p != end; ++p) {
        const char c = *p;
        if (static_cast<unsigned char>(c) >= 0x80) {
            // The format is UTF-8, and node_exporter drops the whole file for one label value that is
            // not (a netdev may be named with any bytes): such a byte becomes U+FFFD.
            const std::size_t n = utf8_sequence_length(p, end);
            if (n == 0) {
                out += kUtf8Replacement;
            } else {
                out.append(p, n);
                p += n - 1;
            }
            continue;
        }
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '"':
                out += "\\\"";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                out.push_back(c);
        }
    }
}

void append_escaped_help(std::string& out, std::string_view help) {
    for (char c : help) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                out.push_back(c);
        }
    }
}

void append_double(std::string& out, double value) {
    if (std::isnan(value)) {
        out += "NaN";
    } else if (std::isinf(value)) {
        out += value > 0 ? "+Inf" : "-Inf";
    } else {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        out.append(buf, ec == std::errc() ? end : buf);
    }
}

void ExpositionWriter::reset(const Labels& base) {
    buffer_.clear();
    base_.clear();
    series_ = 0;
    pending_name_ = {};
    for (const auto& [name, value] : base) {
        if (!base_.empty()) base_.push_back(',');
        base_ += name;
        base_ += "=\"";
        append_escaped_label_value(base_, value);
        base_.push_back('"');
    }
}

void ExpositionWriter::family(std::string_view name, MetricType type, std::string_view help) {
    pending_name_ = name;
    pending_type_ = type;
    pending_help_ = help;
}

void ExpositionWriter::begin_sample(std::string_view name, std::initializer_list<LabelRef> labels) {
    if (!pending_name_.empty()) {
        buffer_ += "# HELP ";
        buffer_ += pending_name_;
        buffer_.push_back(' ');
        append_escaped_help(buffer_, pending_help_);
        buffer_ += "\n# TYPE ";
        buffer_ += pending_name_;
        buffer_ += pending_type_ == MetricType::counter ? " counter\n" : " gauge\n";
        pending_name_ = {};
    }
    ++series_;
    buffer_ += name;
    if (base_.empty() && labels.size() == 0) {
        buffer_.push_back(' ');
        return;
    }
    buffer_.push_back('{');
    buffer_ += base_;
    bool first = base_.empty();
    for (const LabelRef& label : labels) {
        if (!first) buffer_.push_back(',');
        first = false;
        buffer_ += label.name;
        buffer_ += "=\"";
        append_escaped_label_value(buffer_, label.value);
        buffer_.push_back('"');
    }
    buffer_ += "} ";
}

void ExpositionWriter::sample(std::string_view name, std::initializer_list<LabelRef> labels, double value) {
    begin_sample(name, labels);
    append_double(buffer_, value);
    buffer_.push_back('\n');
}

void ExpositionWriter::sample(std::string_view name, std::initializer_list<LabelRef> labels,
                              std::uint64_t value) {
    begin_sample(name, labels);
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    buffer_.append(buf, ec == std::errc() ? end : buf);
    buffer_.push_back('\n');
}

}  // namespace stallscope
