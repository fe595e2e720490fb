#include "libstallscope/timeline/touched_fields.h"

#include <algorithm>
#include <charconv>

namespace stallscope {

TouchTarget touch_target(std::string_view pointer) {
    TouchTarget t;
    if (pointer.empty() || pointer[0] != '/') {
        t.everything = true;
        return t;
    }
    const std::size_t end = std::min(pointer.find('/', 1), pointer.size());
    const std::string_view key = pointer.substr(1, end - 1);
    if (key.find('~') != std::string_view::npos) {  // escaped: not one of ours, re-read it all
        t.everything = true;
        return t;
    }
    t.field = snapshot_field(key);
    if ((t.field == SnapshotField::interfaces || t.field == SnapshotField::rdma ||
         t.field == SnapshotField::gpus) &&
        end < pointer.size()) {
        const std::size_t next = std::min(pointer.find('/', end + 1), pointer.size());
        std::size_t index = 0;
        const char* first = pointer.data() + end + 1;
        const char* last = pointer.data() + next;
        const auto r = std::from_chars(first, last, index);
        if (first != last && r.ec == std::errc() && r.ptr == last) t.element = index;
    }
    return t;
}

void TouchedFields::touch(const TouchTarget& t) {
    if (t.everything) {
        any_ = everything_ = true;
        return;
    }
    if (t.field == SnapshotField::none) return;  // "schema", or a key snapshot_from_json ignores
    any_ = true;
    const auto f = static_cast<std::size_t>(t.field);
    if (t.element == TouchTarget::kWhole) {
        whole_[f] = true;
        return;
    }
    // The index named a node the decoder just changed, so it is within the array: flags stay bounded
    // by the tree, and each element is re-read once however many changes it had.
    auto& seen = seen_[f];
    if (t.element >= seen.size()) seen.resize(t.element + 1, 0);
    if (seen[t.element]) return;
    seen[t.element] = 1;
    elements_[f].push_back(t.element);
}

void TouchedFields::clear() {
    if (!any_) return;
    any_ = everything_ = false;
    whole_.fill(false);
    for (std::size_t f = 0; f < kFields; ++f) {
        for (const std::size_t i : elements_[f]) seen_[f][i] = 0;
        elements_[f].clear();
    }
}

bool holds_counters(SnapshotField field) {
    return field == SnapshotField::host_stats || field == SnapshotField::interfaces ||
           field == SnapshotField::rdma || field == SnapshotField::gpus || field == SnapshotField::job_cgroup;
}

}  // namespace stallscope
