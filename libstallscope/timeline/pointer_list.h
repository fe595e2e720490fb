// The v2 writer's kept lists of JSON Pointers (snapshot_diff.h): "keys" for the integers that move,
// "gkeys" for the numbers written whole ("g"). A list is kept stable within a frame, because rewriting the
// names cost most of a record's compressed size: a pointer that moves is appended once, stays while it
// moves, and is dropped after kIdleRecords records without a move or when a "set" replaced its node.
// Entries are reused in place (strings assigned over), so a list allocates nothing once grown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace stallscope {

inline constexpr std::uint32_t kIdleRecords = 64;  // a listed pointer that has not moved this long is dropped

// `pointer` is `prefix` or below it.
inline bool pointer_under(std::string_view pointer, std::string_view prefix) {
    return pointer.starts_with(prefix) && (pointer.size() == prefix.size() || pointer[prefix.size()] == '/');
}

template <typename Slot>
class PointerList {
  public:
    struct Entry {
        std::string pointer;
        Slot slot{};
        std::uint32_t idle = 0;
        bool moved = false;  // this record
        bool fresh = false;  // appended this record
    };

    void clear() {
        used_ = 0;
        index_.clear();
        changed_ = false;
    }
    // A new record: nothing has moved yet.
    void begin_record() {
        for (std::size_t i = 0; i < used_; ++i) entries_[i].moved = entries_[i].fresh = false;
        next_ = 0;
        changed_ = false;
        any_moved_ = false;
    }
    // The entry of `pointer`, marked moved; appended when not listed. Pointers come in the tree's order,
    // which is mostly the list's, so the entry after the last one found is tried first.
    Entry& moved(std::string_view pointer) {
        std::size_t at = next_;
        if (at >= used_ || entries_[at].pointer != pointer) {
            if (const auto it = index_.find(pointer); it != index_.end()) {
                at = it->second;
            } else {
                at = used_++;
                if (at == entries_.size()) entries_.emplace_back();
                entries_[at].pointer.assign(pointer);
                entries_[at].slot = Slot{};
                entries_[at].fresh = true;
                index_.emplace(entries_[at].pointer, static_cast<std::uint32_t>(at));
                changed_ = true;
            }
        }
        Entry& e = entries_[at];
        e.moved = true;
        e.idle = 0;
        any_moved_ = true;
        next_ = at + 1;
        return e;
    }
    // Drops what did not move and has been idle kIdleRecords records, or lies under one of
    // removed[0, removed_used) (a node this record "set"), keeping the order of the rest.
    void end_record(const std::vector<std::string>& removed, std::size_t removed_used) {
        std::size_t out = 0;
        for (std::size_t j = 0; j < used_; ++j) {
            Entry& e = entries_[j];
            bool drop = false;
            if (!e.moved) {
                drop = ++e.idle >= kIdleRecords;
                for (std::size_t r = 0; !drop && r < removed_used; ++r)
                    drop = pointer_under(e.pointer, removed[r]);
            }
            if (drop) {
                changed_ = true;
                continue;
            }
            if (out != j) std::swap(entries_[out], entries_[j]);
            ++out;
        }
        used_ = out;
        if (changed_) reindex();
    }
    // The list was rewritten by the caller (an entry's slot changed how it is written).
    void mark_changed() { changed_ = true; }
    bool changed() const { return changed_; }
    bool any_moved() const { return any_moved_; }
    std::size_t size() const { return used_; }
    Entry& operator[](std::size_t i) { return entries_[i]; }
    const Entry& operator[](std::size_t i) const { return entries_[i]; }
    // The index of `pointer` in the list, or -1.
    std::ptrdiff_t find(std::string_view pointer) const {
        const auto it = index_.find(pointer);
        return it == index_.end() ? -1 : static_cast<std::ptrdiff_t>(it->second);
    }

  private:
    void reindex() {
        index_.clear();
        for (std::size_t j = 0; j < used_; ++j)
            index_.emplace(entries_[j].pointer, static_cast<std::uint32_t>(j));
    }

    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::vector<Entry> entries_;
    std::size_t used_ = 0;
    std::size_t next_ = 0;
    bool changed_ = false;
    bool any_moved_ = false;
    std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> index_;
};

}  // namespace stallscope
