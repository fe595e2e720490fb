// FlatMap: a sorted vector of (name, value) with the part of std::map's interface that stallscope uses.
//
// Snapshot's counter maps (an RDMA port's ~90 counters, an interface's ethtool pause counters) and the
// profiler's delta rows are rebuilt or rewritten every sample and walked in name order by the timeline
// writer, the rates and the rules. In a std::map each entry is a node of its own (an allocation, a pointer
// chase per step of a walk); here the entries are contiguous. Lookups take a std::string_view, so callers
// need not build a key string. Order is std::string's (byte order), the same as std::map<std::string, V>,
// so JSON written from either is identical.
//
// Unlike std::map, an insertion moves the entries after it: a pointer or iterator into a FlatMap is good
// only until the next insertion or erase (readers that keep pointers re-find them when a map is rebuilt).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace stallscope {

template <class V>
class FlatMap {
  public:
    using key_type = std::string;
    using mapped_type = V;
    using value_type = std::pair<std::string, V>;
    using iterator = typename std::vector<value_type>::iterator;
    using const_iterator = typename std::vector<value_type>::const_iterator;

    FlatMap() = default;
    // Any order, as std::map's: sorted here; a repeated name keeps its first value, as std::map does.
    FlatMap(std::initializer_list<value_type> items) {
        items_.reserve(items.size());
        for (const auto& item : items) try_emplace(item.first, item.second);
    }
    bool operator==(const FlatMap&) const = default;

    iterator begin() { return items_.begin(); }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    void clear() { items_.clear(); }
    void reserve(std::size_t n) { items_.reserve(n); }
    void swap(FlatMap& other) noexcept { items_.swap(other.items_); }

    const_iterator find(std::string_view key) const {
        auto it = lower(key);
        return it != items_.end() && it->first == key ? it : items_.end();
    }
    iterator find(std::string_view key) {
        auto it = lower(key);
        return it != items_.end() && it->first == key ? it : items_.end();
    }
    std::size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
    bool contains(std::string_view key) const { return find(key) != end(); }
    const V& at(std::string_view key) const {
        auto it = find(key);
        if (it == end()) throw std::out_of_range("FlatMap::at: no entry " + std::string(key));
        return it->second;
    }
    V& at(std::string_view key) { return const_cast<V&>(std::as_const(*this).at(key)); }
    V& operator[](std::string_view key) { return try_emplace(key).first->second; }

    // As std::map's: the entry for `key`, added with V(args...) when missing (else left as it is).
    template <class... Args>
    std::pair<iterator, bool> try_emplace(std::string_view key, Args&&... args) {
        auto it = lower(key);
        if (it != items_.end() && it->first == key) return {it, false};
        return {items_.emplace(it, std::piecewise_construct, std::forward_as_tuple(key),
                               std::forward_as_tuple(std::forward<Args>(args)...)),
                true};
    }
    template <class M>
    std::pair<iterator, bool> insert_or_assign(std::string_view key, M&& value) {
        auto [it, added] = try_emplace(key);
        it->second = std::forward<M>(value);
        return {it, added};
    }
    // With a hint, as std::map's: entries given in name order at end() are appended without a search.
    template <class M>
    iterator insert_or_assign(const_iterator hint, std::string_view key, M&& value) {
        if (appends(hint, key)) return append(key, std::forward<M>(value));
        return insert_or_assign(key, std::forward<M>(value)).first;
    }
    template <class M>
    iterator emplace_hint(const_iterator hint, std::string_view key, M&& value) {
        if (appends(hint, key)) return append(key, std::forward<M>(value));
        return try_emplace(key, std::forward<M>(value)).first;
    }
    template <class M>
    std::pair<iterator, bool> emplace(std::string_view key, M&& value) {
        return try_emplace(key, std::forward<M>(value));
    }
    std::size_t erase(std::string_view key) {
        auto it = find(key);
        if (it == items_.end()) return 0;
        items_.erase(it);
        return 1;
    }
    iterator erase(const_iterator it) { return items_.erase(it); }

    // For in-place rewrites that keep the entries sorted by name and unique (compute_rates).
    std::vector<value_type>& storage() { return items_; }

  private:
    // A hint of end() for a key after every name: the new entry goes last, no search, nothing to assign.
    bool appends(const_iterator hint, std::string_view key) const {
        return hint == end() && (items_.empty() || std::string_view(items_.back().first) < key);
    }
    template <class M>
    iterator append(std::string_view key, M&& value) {
        items_.emplace_back(std::string(key), std::forward<M>(value));
        return std::prev(items_.end());
    }
    template <class It>
    static It lower_in(It first, It last, std::string_view key) {
        return std::lower_bound(first, last, key, [](const value_type& e, std::string_view k) {
            return std::string_view(e.first) < k;
        });
    }
    iterator lower(std::string_view key) { return lower_in(items_.begin(), items_.end(), key); }
    const_iterator lower(std::string_view key) const { return lower_in(items_.begin(), items_.end(), key); }

    std::vector<value_type> items_;
};

}  // namespace stallscope
