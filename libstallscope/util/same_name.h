// Counter-name equality by 8-byte words, without a call to memcmp: the rates code compares names of
// 8-40 bytes several times per counter per sample (previous vs current map, layout vs sample), and they
// are equal nearly always.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace stallscope {

namespace same_name_detail {
inline std::uint64_t load8(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
}  // namespace same_name_detail

inline bool same_name(std::string_view a, std::string_view b) {
    using same_name_detail::load8;
    const std::size_t n = a.size();
    if (n != b.size()) return false;
    if (n < 8) return a == b;
    for (std::size_t i = 0; i + 8 <= n; i += 8)
        if (load8(a.data() + i) != load8(b.data() + i)) return false;
    return load8(a.data() + n - 8) == load8(b.data() + n - 8);  // the tail, overlapping the last chunk
}

}  // namespace stallscope
