// Prometheus text exposition format (version 0.0.4) into one reused buffer: HELP/TYPE once per family,
// samples grouped under their family, label values escaped (backslash, double quote, newline).
// No timestamps: node_exporter's textfile collector rejects them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "libstallscope/sinks/sink_labels.h"

namespace stallscope {

struct LabelRef {
    std::string_view name, value;
};

enum class MetricType { gauge, counter };

class ExpositionWriter {
  public:
    // Start a new document; `base` labels go first on every sample (rendered once here).
    void reset(const Labels& base);

    // Declare the family the following samples belong to. HELP + TYPE are written with its first sample,
    // so a family with no samples leaves no trace. The views must stay valid until the next family().
    void family(std::string_view name, MetricType type, std::string_view help);

    void sample(std::string_view name, std::initializer_list<LabelRef> labels, double value);
    void sample(std::string_view name, std::initializer_list<LabelRef> labels, std::uint64_t value);

    const std::string& text() const { return buffer_; }
    std::size_t series() const { return series_; }

  private:
    void begin_sample(std::string_view name, std::initializer_list<LabelRef> labels);

    std::string buffer_;  // reused across documents: capacity stays, no per-sample allocation
    std::string base_;    // rendered `a="x",b="y"` of the base labels
    std::size_t series_ = 0;
    std::string_view pending_name_, pending_help_;  // family declared, header not yet written
    MetricType pending_type_ = MetricType::gauge;
};

// Exposition-format escaping, exposed for tests and for the Alertmanager sink's evidence text.
void append_escaped_label_value(std::string& out, std::string_view value);
void append_escaped_help(std::string& out, std::string_view help);
// Shortest round-trip decimal; NaN, +Inf, -Inf spelled as the format wants them.
void append_double(std::string& out, double value);

}  // namespace stallscope
