#include "libstallscope/model/rates.h"

#include "libstallscope/model/rates_fields.h"
#include "libstallscope/util/same_name.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace stallscope {
namespace {

using namespace rates_fields;

template <class T>
std::optional<CounterDelta> field_delta(const Field<T>& f, const T& p, const T& c, double dt) {
    const Counter *a = f.get(p), *b = f.get(c);
    if (!a || !b) return std::nullopt;
    return counter_delta(*a, *b, dt);
}

// ---- In-place writers: overwrite a sorted vector front to back, truncate what is left ----
// When the names are those of the last sample (the steady state) each write is one string compare and
// a copy of the delta: no allocation, no tree rebalancing.

struct RowWriter {
    DeltaRow& row;
    double dt;  // > 0
    std::vector<DeltaRow::value_type>& v = row.storage();
    std::size_t w = 0;
    bool renamed = false;
    // The delta of one counter under `name` when both reads are present, written in place: inlined so
    // that it goes straight to the row (through a stack temporary, the 16-byte reload of fields just
    // written one by one stalled on store forwarding: half of this path's time in perf).
    [[gnu::always_inline]] void put(std::string_view name, const Counter& prev, const Counter& cur) {
        if (!prev || !cur) return;
        counter_delta_into(*prev, *cur, dt, slot(name));
    }
    [[gnu::always_inline]] void put(std::string_view name, const CounterDelta& d) { slot(name) = d; }
    bool finish() {
        if (w < v.size()) v.erase(v.begin() + static_cast<std::ptrdiff_t>(w), v.end()), renamed = true;
        if (renamed || row.dirty()) row.reindex();  // the rules' index follows the names
        return w > 0;
    }

  private:
    [[gnu::always_inline]] CounterDelta& slot(std::string_view name) {
        if (w < v.size()) {
            if (!same_name(v[w].first, name)) v[w].first.assign(name), renamed = true;
        } else {
            v.emplace_back(std::string(name), CounterDelta{});
            renamed = true;
        }
        return v[w++].second;
    }
};

struct TableWriter {
    std::vector<DeltaTable::value_type>& v;
    std::size_t w = 0;
    // The row for `entity`, to be filled with a RowWriter; keep() it when it ended up non-empty.
    DeltaRow& row(std::string_view entity) {
        if (w < v.size()) {
            if (!same_name(v[w].first, entity)) v[w].first.assign(entity);
        } else {
            v.emplace_back(std::string(entity), DeltaRow{});
        }
        return v[w].second;
    }
    void keep(bool non_empty) { w += non_empty ? 1 : 0; }
    void finish() { v.erase(v.begin() + static_cast<std::ptrdiff_t>(w), v.end()); }
};

template <class T>
[[gnu::always_inline]] inline void write_field(RowWriter& row, const Field<T>& f, const T& p, const T& c) {
    const Counter *a = f.get(p), *b = f.get(c);
    if (a && b) row.put(f.name, *a, *b);
}

template <class T, std::size_t N>
void write_fields(RowWriter& row, const std::array<Field<T>, N>& fields, const T& p, const T& c) {
    for (const auto& f : fields) write_field(row, f, p, c);
}

// Counters named in both maps, merged in name order with the fixed fields (a map entry with a field's
// name replaces the field's delta when it has one, as the map is applied after the fields).
template <class T, std::size_t N>
void write_merged(RowWriter& row, const std::array<Field<T>, N>& fields, const T& p, const T& c,
                  const CounterMap& pm, const CounterMap& cm) {
    auto f = fields.begin();
    auto pi = pm.begin();
    auto ci = cm.begin();
    while (ci != cm.end() || f != fields.end()) {
        // Advance to the next name present in both maps.
        while (ci != cm.end() && pi != pm.end()) {
            if (same_name(pi->first, ci->first)) break;
            if (pi->first.compare(ci->first) < 0)
                ++pi;
            else
                ++ci;
        }
        if (ci == cm.end() || pi == pm.end()) {
            for (; f != fields.end(); ++f) write_field(row, *f, p, c);
            return;
        }
        const int order = f == fields.end() ? 1 : f->name.compare(ci->first);
        if (order < 0) {
            write_field(row, *f, p, c);
            ++f;
            continue;
        }
        if (order == 0 && !(pi->second && ci->second))
            write_field(row, *f, p, c);  // the map has no delta under this name: the field's stands
        else
            row.put(ci->first, pi->second, ci->second);
        if (order == 0) ++f;
        ++pi, ++ci;
    }
}

// Counters named in both maps, in name order (std::map order is the row's order).
void write_map(RowWriter& row, const CounterMap& pm, const CounterMap& cm) {
    auto pi = pm.begin();
    auto ci = cm.begin();
    while (ci != cm.end() && pi != pm.end()) {
        if (same_name(pi->first, ci->first)) {
            row.put(ci->first, pi->second, ci->second);
            ++pi, ++ci;
        } else if (pi->first.compare(ci->first) < 0) {
            ++pi;
        } else {
            ++ci;
        }
    }
}

void rdma_key_into(const RdmaPort& p, std::string& out) {
    out.assign(p.device);
    char digits[16];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, p.port);
    out.push_back('/');
    out.append(digits, end);
}

// The fast path applies when both samples list the same entities in the same order under unique keys:
// then entity i of one is entity i of the other, and `scratch.order` lists them in key (= table) order.
template <class E, class Key>
bool same_layout(RatesScratch& s, const std::vector<E>& prev, const std::vector<E>& cur, Key key) {
    if (prev.size() != cur.size()) return false;
    // Grown, never shrunk: the lists take turns in these strings, and a shrink would free the capacity
    // that the next (longer) list needs again.
    if (s.prev_keys.size() < cur.size()) s.prev_keys.resize(cur.size());
    if (s.cur_keys.size() < cur.size()) s.cur_keys.resize(cur.size());
    for (std::size_t i = 0; i < cur.size(); ++i) {
        key(prev[i], s.prev_keys[i]);
        key(cur[i], s.cur_keys[i]);
        if (!same_name(s.prev_keys[i], s.cur_keys[i])) return false;
    }
    s.order.resize(cur.size());
    for (std::size_t i = 0; i < cur.size(); ++i) {  // insertion sort: a handful, usually already sorted
        std::size_t j = i;
        for (; j > 0 && s.cur_keys[i] < s.cur_keys[s.order[j - 1]]; --j) s.order[j] = s.order[j - 1];
        s.order[j] = i;
    }
    for (std::size_t i = 1; i < cur.size(); ++i)
        if (s.cur_keys[s.order[i]] == s.cur_keys[s.order[i - 1]]) return false;  // duplicates: general path
    return true;
}

bool fast_interfaces(Rates& r, const Snapshot& p, const Snapshot& c, double dt) {
    const auto name = [](const NetInterface& i, std::string& out) { out.assign(i.name); };
    if (!same_layout(r.scratch, p.interfaces, c.interfaces, name)) return false;
    TableWriter table{r.interfaces.storage()};
    for (const std::size_t i : r.scratch.order) {
        RowWriter row{table.row(c.interfaces[i].name), dt};
        write_merged(row, interface_fields(), p.interfaces[i], c.interfaces[i], p.interfaces[i].pause,
                     c.interfaces[i].pause);
        table.keep(row.finish());
    }
    table.finish();
    return true;
}

bool fast_rdma(Rates& r, const Snapshot& p, const Snapshot& c, double dt) {
    if (!same_layout(r.scratch, p.rdma, c.rdma, rdma_key_into)) return false;
    TableWriter counters{r.rdma_counters.storage()}, hw{r.rdma_hw_counters.storage()};
    for (const std::size_t i : r.scratch.order) {
        const std::string& key = r.scratch.cur_keys[i];
        RowWriter a{counters.row(key), dt};
        write_map(a, p.rdma[i].counters, c.rdma[i].counters);
        counters.keep(a.finish());
        RowWriter b{hw.row(key), dt};
        write_map(b, p.rdma[i].hw_counters, c.rdma[i].hw_counters);
        hw.keep(b.finish());
    }
    counters.finish();
    hw.finish();
    return true;
}

bool fast_gpus(Rates& r, const Snapshot& p, const Snapshot& c, double dt) {
    if (!same_layout(r.scratch, p.gpus, c.gpus, gpu_key_into)) return false;
    TableWriter table{r.gpus.storage()};
    for (const std::size_t i : r.scratch.order) {
        RowWriter row{table.row(r.scratch.cur_keys[i]), dt};
        write_fields(row, gpu_fields(), p.gpus[i], c.gpus[i]);
        table.keep(row.finish());
    }
    table.finish();
    return true;
}

void fast_host(Rates& r, const Snapshot& p, const Snapshot& c, double dt) {
    TableWriter table{r.host.storage()};  // "host" < "job_cgroup": already in table order
    RowWriter host{table.row("host"), dt};
    write_fields(host, host_fields(), p.host_stats, c.host_stats);
    table.keep(host.finish());
    // The job's cgroup, compared only within one cgroup path.
    if (p.job_cgroup && c.job_cgroup && p.job_cgroup->path == c.job_cgroup->path) {
        RowWriter job{table.row("job_cgroup"), dt};
        write_fields(job, cgroup_fields(), *p.job_cgroup, *c.job_cgroup);
        table.keep(job.finish());
    }
    table.finish();
}

// ---- General path: any layout (entities added, removed, reordered or listed twice) ----
// Allocates; taken only when the fast path's conditions do not hold. Duplicate names keep what the
// original map-based code did: interface rows accumulate over every matching pair, RDMA rows are
// replaced by the last non-empty pair.

void put(DeltaRow& row, std::string_view name, const std::optional<CounterDelta>& d) {
    if (d) row[name] = *d;
}

void put_map(DeltaRow& row, const CounterMap& prev, const CounterMap& cur, double dt) {
    for (const auto& [name, value] : cur)
        if (auto it = prev.find(name); it != prev.end()) put(row, name, counter_delta(it->second, value, dt));
}

template <class T, std::size_t N>
void put_fields(DeltaTable& table, std::string_view entity, const std::array<Field<T>, N>& fields, const T& p,
                const T& c, double dt) {
    DeltaRow& row = table[entity];
    for (const auto& f : fields) put(row, f.name, field_delta(f, p, c, dt));
    if (row.empty()) table.erase(entity);
}

void general(Rates& r, const Snapshot& previous, const Snapshot& current, double dt) {
    r.host.clear();
    r.interfaces.clear();
    r.rdma_counters.clear();
    r.rdma_hw_counters.clear();
    r.gpus.clear();
    put_fields(r.host, "host", host_fields(), previous.host_stats, current.host_stats, dt);
    if (previous.job_cgroup && current.job_cgroup && previous.job_cgroup->path == current.job_cgroup->path)
        put_fields(r.host, "job_cgroup", cgroup_fields(), *previous.job_cgroup, *current.job_cgroup, dt);
    for (const auto& c : current.interfaces) {
        for (const auto& p : previous.interfaces) {
            if (p.name != c.name) continue;
            DeltaRow& row = r.interfaces[c.name];
            for (const auto& f : interface_fields()) put(row, f.name, field_delta(f, p, c, dt));
            put_map(row, p.pause, c.pause, dt);
            if (row.empty()) r.interfaces.erase(c.name);
        }
    }
    for (const auto& c : current.rdma) {
        for (const auto& p : previous.rdma) {
            if (p.device != c.device || p.port != c.port) continue;
            DeltaRow counters, hw;
            put_map(counters, p.counters, c.counters, dt);
            put_map(hw, p.hw_counters, c.hw_counters, dt);
            if (!counters.empty()) r.rdma_counters[c.key()] = std::move(counters);
            if (!hw.empty()) r.rdma_hw_counters[c.key()] = std::move(hw);
        }
    }
    for (const auto& c : current.gpus)
        for (const auto& p : previous.gpus)
            if (gpu_key(p) == gpu_key(c)) put_fields(r.gpus, gpu_key(c), gpu_fields(), p, c, dt);
    for (DeltaTable* t : {&r.host, &r.interfaces, &r.rdma_counters, &r.rdma_hw_counters, &r.gpus})
        for (auto& [entity, row] : *t) row.reindex();
}

}  // namespace

std::string gpu_key(const Gpu& gpu) {
    std::string key;
    gpu_key_into(gpu, key);
    return key;
}

void gpu_key_into(const Gpu& gpu, std::string& out) {
    // A kept finding's subject, sample after sample: written only when it differs.
    if (!gpu.uuid.empty()) {
        assign_if_other(out, gpu.uuid);
        return;
    }
    char key[24] = "gpu";
    const auto end = std::to_chars(key + 3, key + sizeof key, gpu.index).ptr;
    assign_if_other(out, std::string_view(key, static_cast<std::size_t>(end - key)));
}

void DeltaRow::reindex() {
    known_.fill(-1);
    std::int32_t at = 0;
    for (const auto& [name, delta] : *this) {
        const auto* known = std::lower_bound(std::begin(kRuleCounterNames), std::end(kRuleCounterNames),
                                             std::string_view(name));
        if (known != std::end(kRuleCounterNames) && *known == name)
            known_[static_cast<std::size_t>(known - std::begin(kRuleCounterNames))] = at;
        ++at;
    }
    dirty_ = false;
}

const CounterDelta* Rates::find(const DeltaTable& table, std::string_view entity,
                                std::string_view counter) const {
    auto row = table.find(entity);
    if (row == table.end()) return nullptr;
    auto cell = row->second.find(counter);
    return cell == row->second.end() ? nullptr : &cell->second;
}

void compute_rates_into(Rates& r, const Snapshot& previous, const Snapshot& current) {
    r.interval_seconds = current.time - previous.time;
    const double dt = r.interval_seconds;
    if (!(dt > 0)) {  // clock went backwards or same sample: no deltas
        r.host.clear();
        r.interfaces.clear();
        r.rdma_counters.clear();
        r.rdma_hw_counters.clear();
        r.gpus.clear();
        return;
    }
    fast_host(r, previous, current, dt);
    if (!fast_interfaces(r, previous, current, dt) || !fast_rdma(r, previous, current, dt) ||
        !fast_gpus(r, previous, current, dt))
        general(r, previous, current, dt);
}

Rates compute_rates(const Snapshot& previous, const Snapshot& current) {
    Rates r;
    compute_rates_into(r, previous, current);
    return r;
}

}  // namespace stallscope
