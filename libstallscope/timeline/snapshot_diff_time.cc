// The "/time" rule of stallscope.timeline/2 change records (snapshot_diff.h): "/time" is the RFC 3339 text
// of "/unix_time", so a record that moves the time carries the number only and readers derive the text.
// It saved ~6 B of every compressed 1 s sample (the text differs each second in digits zstd cannot predict
// from the number it has just read).
#include <cmath>
#include <cstring>

#include "libstallscope/timeline/snapshot_diff.h"

namespace stallscope {
namespace {

// Whether a record would leave `before` as it is: how SnapshotDiffEncoder::diff decides that a leaf
// changed (a different JSON type is a change; -0.0 and 0.0 dump differently).
bool same_leaf(const Json& before, const Json& after) {
    if (before.type() != after.type()) return false;
    if (after.is_number_float()) {
        const double a = after.get<double>(), b = before.get<double>();
        return std::memcmp(&a, &b, sizeof a) == 0;
    }
    return before == after;
}

// Whether a reader derives "/time" from this "/unix_time": a finite number (not finite, it is written as
// null).
bool derivable(const Json& unix_time) {
    return unix_time.is_number() && std::isfinite(unix_time.get<double>());
}

}  // namespace

// The writer's side, before comparing the trees: when this record will change "/unix_time", a reader
// derives "/time" unless the record sets it. previous_'s "/time" becomes what that reader will hold: the
// new text when it is the derived one (nothing to write), or null when the new text is the old one but
// not the derived one (the comparison then sets it).
void SnapshotDiffEncoder::derive_time(const Json& tree) {
    if (!previous_.is_object() || !tree.is_object()) return;
    const auto before_unix = previous_.find("unix_time");
    const auto before_time = previous_.find("time");
    const auto after_unix = tree.find("unix_time");
    if (before_unix == previous_.end() || before_time == previous_.end() || !before_time->is_string() ||
        after_unix == tree.end() || !derivable(*after_unix) || same_leaf(*before_unix, *after_unix))
        return;
    const auto after_time = tree.find("time");
    if (after_time == tree.end()) return;  // the root's keys differ: the whole tree is set
    if (after_time->is_string() && *after_time == format_rfc3339(after_unix->get<double>()))
        *before_time = *after_time;
    else if (*before_time == *after_time)
        *before_time = nullptr;
}

void SnapshotDiffDecoder::end_record() {
    derive_time(false);
}

void SnapshotDiffDecoder::unix_time_moved() {
    derive_time(true);
}

void SnapshotDiffDecoder::derive_time(bool moved) {
    if (!have_tree_ || !tree_.is_object()) return remember_unix_time();
    const Json* unix_time = resolve(unix_time_ref_, "/unix_time", scratch_problem_);
    if (!time_set_ && unix_time && derivable(*unix_time) &&
        (moved || !same_leaf(last_unix_time_, *unix_time))) {
        Json* time = resolve(time_ref_, "/time", scratch_problem_);
        if (time && time->is_string()) {
            auto& text = time->get_ref<std::string&>();
            text.clear();
            append_rfc3339(text, unix_time->get<double>());
        }
    }
    remember_unix_time();
}

void SnapshotDiffDecoder::remember_unix_time() {
    time_set_ = false;
    last_unix_time_ = Json();
    if (!have_tree_ || !tree_.is_object()) return;
    if (const auto it = tree_.find("unix_time"); it != tree_.end()) last_unix_time_ = *it;
}

}  // namespace stallscope
