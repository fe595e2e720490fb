#include "libstallscope/timeline/timeline_export.h"

namespace stallscope {
namespace {

class Exporter final : public TimelineVisitor {
  public:
    explicit Exporter(std::FILE* out) : out_(out) {}

    // A v2 writer that reopened its file (helper restarted, timeline moved off a full disk) repeats the
    // header at the start of its new frame; a v1 file has one header, so a repeat of the same header is
    // passed on once (a different one is kept: it says something changed).
    void header(const Json& h) override {
        Json v1 = h;
        if (v1.contains("schema")) v1["schema"] = kTimelineSchema;
        if (have_header_ && v1 == first_header_) return;
        if (!have_header_) first_header_ = v1, have_header_ = true;
        write(v1);
    }
    void sample(Snapshot&& snapshot) override { sample_view(snapshot); }
    void sample_view(const Snapshot& snapshot) override {  // no copy of the reader's sample
        line_ = Json{{"type", "sample"}};
        fields_ = to_json(snapshot);
        for (auto& [key, value] : fields_.items()) line_[key] = std::move(value);
        write(line_);
    }
    void event(const Json& e) override { write(e); }
    void verdict(const Json& v) override { write(v); }

  private:
    void write(const Json& line) {
        text_ = line.dump(-1, ' ', false, Json::error_handler_t::replace);
        text_.push_back('\n');
        std::fwrite(text_.data(), 1, text_.size(), out_);
    }

    std::FILE* out_;
    Json first_header_;
    bool have_header_ = false;
    Json line_, fields_;
    std::string text_;
};

}  // namespace

bool export_timeline(const std::string& path, std::FILE* out, std::vector<std::string>& warnings,
                     std::string& error) {
    Exporter exporter(out);
    if (!visit_timeline(path, exporter, warnings, error)) return false;
    if (std::fflush(out) != 0 || std::ferror(out)) {
        error = "writing the export failed";
        return false;
    }
    return true;
}

}  // namespace stallscope
