#include "libstallscope/timeline/timeline_export.h"

#include "libstallscope/model/snapshot_json_text.h"

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
    // No copy of the reader's sample. The line is {"type":"sample", then to_json(snapshot)'s members}:
    // written straight from the struct (snapshot_json_text.h: dump()'s bytes, ~4x faster than building
    // and dumping the tree), or through the tree where that writer cannot promise the bytes (ill-formed
    // UTF-8, which dump() replaces; a sample read from a timeline has none, the reader checks UTF-8).
    void sample_view(const Snapshot& snapshot) override {
        text_.assign(R"({"type":"sample")");
        const std::size_t members = text_.size();
        if (append_snapshot_json(text_, snapshot) && text_.size() > members + 1 && text_[members] == '{') {
            if (text_.size() == members + 2) {  // "{}": no members
                text_.resize(members);
                text_.push_back('}');
            } else {
                text_[members] = ',';  // the snapshot's closing brace closes the line
            }
            text_.push_back('\n');
            std::fwrite(text_.data(), 1, text_.size(), out_);
            return;
        }
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
