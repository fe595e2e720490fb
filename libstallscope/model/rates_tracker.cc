#include "libstallscope/model/rates_tracker.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "libstallscope/model/rates_fields.h"
#include "libstallscope/util/same_name.h"
#include "libstallscope/util/unique_id.h"

namespace stallscope {
namespace {

using Token = RatesTracker::Token;
enum Kind : std::uint8_t { kCgroup, kList, kInterface, kRdma, kMap, kGpu, kLink };

// Every counter compute_rates compares, in one fixed order, with the structure that decides which
// counter is which. A visitor has token(kind, text, number) -> bool (false stops the walk),
// field(name, const Counter*) for a struct's counter and named(name, const Counter&) -> bool for a map's.
template <class V>
bool walk(const Snapshot& s, V& v) {
    using namespace rates_fields;
    for (const auto& f : host_fields()) v.field(f.name, f.get(s.host_stats));
    const JobCgroup* job = s.job_cgroup ? &*s.job_cgroup : nullptr;
    if (!v.token(kCgroup, job ? std::string_view(job->path) : std::string_view(), job ? 1 : 0)) return false;
    if (job)
        for (const auto& f : cgroup_fields()) v.field(f.name, f.get(*job));
    if (!v.token(kList, {}, static_cast<std::int64_t>(s.interfaces.size()))) return false;
    for (const NetInterface& i : s.interfaces) {
        if (!v.token(kInterface, i.name, static_cast<std::int64_t>(i.pause.size()))) return false;
        for (const auto& f : interface_fields()) v.field(f.name, f.get(i));  // fields first: a pause
        for (const auto& [name, c] : i.pause)  // counter of the same name then overwrites, as in rates.cc
            if (!v.named(name, c)) return false;
    }
    if (!v.token(kList, {}, static_cast<std::int64_t>(s.rdma.size()))) return false;
    for (const RdmaPort& p : s.rdma) {
        if (!v.token(kRdma, p.device, p.port)) return false;
        if (!v.token(kMap, {}, static_cast<std::int64_t>(p.counters.size()))) return false;
        for (const auto& [name, c] : p.counters)
            if (!v.named(name, c)) return false;
        if (!v.token(kMap, {}, static_cast<std::int64_t>(p.hw_counters.size()))) return false;
        for (const auto& [name, c] : p.hw_counters)
            if (!v.named(name, c)) return false;
    }
    if (!v.token(kList, {}, static_cast<std::int64_t>(s.gpus.size()))) return false;
    for (const Gpu& g : s.gpus) {
        if (!v.token(kGpu, g.uuid, g.index)) return false;
        if (!v.token(kLink, {}, g.interconnect ? 1 : 0)) return false;
        for (const auto& f : gpu_fields()) v.field(f.name, f.get(g));
    }
    return true;
}

// Records the layout of a sample (views into it) and its values; notes entity keys for the twin check.
struct LayoutBuilder {
    std::vector<Token>& tokens;
    std::vector<std::string_view>& names;
    std::vector<Counter>& values;
    std::vector<std::string> keys[3];  // interface names, port keys, GPU keys
    int lists = 0;                     // interfaces, RDMA ports, GPUs: the walk's order
    std::size_t rdma_begin = 0, rdma_end = 0;
    bool token(std::uint8_t kind, std::string_view text, std::int64_t number) {
        tokens.push_back(Token{kind, text, number});
        if (kind == kList) {
            if (lists == 1) rdma_begin = values.size();
            if (lists == 2) rdma_end = values.size();
            ++lists;
        }
        if (kind == kInterface) keys[0].emplace_back(text);
        if (kind == kRdma) keys[1].push_back(std::string(text) + "/" + std::to_string(number));
        if (kind == kGpu)
            keys[2].push_back(text.empty() ? "gpu" + std::to_string(number) : std::string(text));
        return true;
    }
    void field(std::string_view, const Counter* c) {
        names.emplace_back();
        values.push_back(c ? *c : Counter{});
    }
    bool named(std::string_view name, const Counter& c) {
        names.push_back(name);
        values.push_back(c);
        return true;
    }
    bool unique_keys() {
        for (auto& k : keys) {
            std::sort(k.begin(), k.end());
            if (std::adjacent_find(k.begin(), k.end()) != k.end()) return false;
        }
        return true;
    }
};

// Checks a sample against the layout (false at the first difference) and reads its values: the steady
// state's only pass over the sample's maps.
struct LayoutReader {
    const std::vector<Token>& tokens;
    const std::vector<std::string_view>& names;
    std::vector<Counter>& values;
    std::size_t t = 0, k = 0;
    bool token(std::uint8_t kind, std::string_view text, std::int64_t number) {
        if (t == tokens.size()) return false;
        const Token& e = tokens[t++];
        return e.kind == kind && e.number == number && same_name(e.text, text);
    }
    void field(std::string_view, const Counter* c) {
        if (k < values.size()) values[k] = c ? *c : Counter{};
        ++k;
    }
    bool named(std::string_view name, const Counter& c) {
        if (k == values.size() || !same_name(names[k], name)) return false;
        values[k++] = c;
        return true;
    }
    bool complete() const { return t == tokens.size() && k == values.size(); }
};

// Writes kept values back into a copy of the layout's sample: the previous sample, for compute_rates.
struct ValueWriter {
    const std::vector<Counter>& values;
    std::size_t k = 0;
    bool token(std::uint8_t, std::string_view, std::int64_t) { return true; }
    // The copy is ours and not const; the walk only hands out const pointers.
    void field(std::string_view, const Counter* c) {
        if (c) *const_cast<Counter*>(c) = values[k];
        ++k;
    }
    bool named(std::string_view, const Counter& c) {
        const_cast<Counter&>(c) = values[k++];
        return true;
    }
};

// Finds each counter's cell in a Rates computed for this layout (nullptr: no delta this interval).
struct CellFinder {
    Rates& rates;
    std::vector<CounterDelta*>& cells;
    DeltaRow* row = nullptr;
    std::string key;
    int maps_seen = 0;
    static DeltaRow* find(DeltaTable& table, std::string_view entity) {
        auto it = table.find(entity);
        return it == table.end() ? nullptr : &it->second;
    }
    bool token(std::uint8_t kind, std::string_view text, std::int64_t number) {
        if (kind == kCgroup) row = number ? find(rates.host, "job_cgroup") : nullptr;
        if (kind == kInterface) row = find(rates.interfaces, text);
        if (kind == kRdma) key = std::string(text) + "/" + std::to_string(number), maps_seen = 0;
        if (kind == kMap) row = find(maps_seen++ == 0 ? rates.rdma_counters : rates.rdma_hw_counters, key);
        if (kind == kGpu)
            row = find(rates.gpus, text.empty() ? "gpu" + std::to_string(number) : std::string(text));
        return true;
    }
    void cell(std::string_view name) {
        CounterDelta* found = nullptr;
        if (row)
            if (auto it = row->find(name); it != row->end()) found = &it->second;
        cells.push_back(found);
    }
    void field(std::string_view name, const Counter*) { cell(name); }
    bool named(std::string_view name, const Counter&) {
        cell(name);
        return true;
    }
};

// Where each counter of a sample sits, in the walk's order.
struct SourceRecorder {
    std::vector<const Counter*>& sources;
    bool token(std::uint8_t, std::string_view, std::int64_t) { return true; }
    void field(std::string_view, const Counter* c) { sources.push_back(c); }
    bool named(std::string_view, const Counter& c) {
        sources.push_back(&c);
        return true;
    }
};

}  // namespace

SnapshotShape SnapshotShape::fresh() {
    return SnapshotShape{process_unique_id()};
}

const Rates* RatesTracker::update(const Snapshot& current, SnapshotShape shape) {
    const double dt = current.time - previous_time_;
    if (has_previous_ && unique_keys_ && dt > 0) {
        if (shape.id != 0 && shape.id == bound_shape_ && &current == bound_) {
            bool written;
            if (moving_only_ && settled_) {
                written = write_moving_cells(dt);
                moving_only_updates_ += written ? 1 : 0;
            } else {
                for (std::size_t k = 0; k < sources_.size(); ++k)
                    current_[k] = sources_[k] ? *sources_[k] : Counter{};
                written = settled_ = write_cells(dt);  // every still counter's cell now zero
            }
            if (written) {
                ++shaped_updates_;
                previous_time_ = current.time;
                return &rates_;
            }
        } else {
            current_.resize(names_.size());  // already that size: no allocation
            LayoutReader reader{tokens_, names_, current_};
            if (walk(current, reader) && reader.complete() && write_cells(dt)) {
                previous_time_ = current.time;
                bind(current, shape);
                return &rates_;
            }
        }
    }
    rebuild(current, dt);
    bind(current, shape);
    return rates();
}

bool RatesTracker::write_cells(double dt) {
    for (std::size_t k = 0; k < cells_.size(); ++k) {
        const Counter &a = previous_[k], &b = current_[k];
        CounterDelta* cell = cells_[k];
        if ((a && b) != (cell != nullptr)) return false;  // a counter turned null or back: other rows
        if (cell) counter_delta_into(*a, *b, dt, *cell);
    }
    rates_.interval_seconds = dt;
    previous_.swap(current_);
    return true;
}

bool RatesTracker::write_moving_cells(double dt) {
    for (const Moving& m : moving_)  // as write_cells: a counter turned null or back changes the rows
        if ((previous_[m.k] && *m.source) != (m.cell != nullptr)) return false;
    for (const Moving& m : moving_) {
        const Counter b = *m.source;
        if (m.cell) counter_delta_into(*previous_[m.k], *b, dt, *m.cell);
        previous_[m.k] = b;
    }
    rates_.interval_seconds = dt;
    return true;
}

void RatesTracker::bind(const Snapshot& current, SnapshotShape shape) {
    bound_shape_ = shape.id;
    bound_ = shape.id != 0 ? &current : nullptr;
    sources_.clear();
    moving_.clear();
    moving_only_ = settled_ = false;
    if (shape.id == 0) return;
    SourceRecorder recorder{sources_};
    walk(current, recorder);  // the sample the layout was just checked against or taken from: same order
    if (!shape.moving_known) return;
    // Which of our counters the shape says may move (a moving counter that rates do not compare, a GPU's
    // memory in use, is none of ours). Once per shape: a few hundred pointers.
    std::vector<std::pair<const Counter*, std::uint32_t>> where;
    where.reserve(sources_.size());
    for (std::size_t k = 0; k < sources_.size(); ++k)
        if (sources_[k]) where.emplace_back(sources_[k], static_cast<std::uint32_t>(k));
    std::sort(where.begin(), where.end());
    for (const Counter* c : shape.moving) {
        auto it = std::lower_bound(where.begin(), where.end(), std::make_pair(c, std::uint32_t{0}));
        for (; it != where.end() && it->first == c; ++it)
            moving_.push_back({c, cells_[it->second], it->second});
    }
    // Two counters writing one cell (a pause counter named like a net/dev column): which one wins
    // depends on the whole walk's order, so those layouts keep the whole pass.
    std::vector<const CounterDelta*> cells(cells_.begin(), cells_.end());
    std::sort(cells.begin(), cells.end());
    const auto first_cell = std::find_if(cells.begin(), cells.end(), [](auto* c) { return c != nullptr; });
    moving_only_ = std::adjacent_find(first_cell, cells.end()) == cells.end();
    const auto by_index = [](const Moving& a, const Moving& b) { return a.k < b.k; };
    std::sort(moving_.begin(), moving_.end(), by_index);  // the walk's order; a key listed twice once
    moving_.erase(std::unique(moving_.begin(), moving_.end(), [](auto& a, auto& b) { return a.k == b.k; }),
                  moving_.end());
}

void RatesTracker::rebuild(const Snapshot& current, double dt) {
    ++rebuilds_;
    if (has_previous_) {  // the previous sample again, as far as compute_rates reads it
        Snapshot previous;
        previous.time = previous_time_;
        previous.host_stats = layout_.host_stats;
        previous.job_cgroup = layout_.job_cgroup;
        previous.interfaces = layout_.interfaces;
        previous.rdma = layout_.rdma;
        previous.gpus = layout_.gpus;
        ValueWriter writer{previous_};
        walk(previous, writer);
        compute_rates_into(rates_, previous, current);
        had_rates_ = true;
    }
    layout_.host_stats = current.host_stats;
    layout_.job_cgroup = current.job_cgroup;
    layout_.interfaces = current.interfaces;
    layout_.rdma = current.rdma;
    layout_.gpus = current.gpus;
    tokens_.clear();
    names_.clear();
    previous_.clear();
    LayoutBuilder builder{tokens_, names_, previous_};  // the new previous: this sample's values
    walk(layout_, builder);
    unique_keys_ = builder.unique_keys();
    rdma_begin_ = builder.rdma_begin;
    rdma_end_ = builder.rdma_end;
    current_.assign(previous_.size(), Counter{});
    cells_.clear();
    if (had_rates_ && dt > 0) {
        CellFinder finder{rates_, cells_};
        finder.row = CellFinder::find(rates_.host, "host");  // the host's fields come before any token
        walk(layout_, finder);
    } else {
        cells_.assign(names_.size(), nullptr);
    }
    has_previous_ = true;
    previous_time_ = current.time;
}

}  // namespace stallscope
