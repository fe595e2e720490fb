// Name equality by 8-byte words, without a call to memcmp: the rates code compares names of 8-40 bytes
// several times per counter per sample (previous vs current map, layout vs sample), the rules a finding's
// code and subject, and they are equal nearly always (a memcmp call of a few bytes cost more than the
// compare: 12 % of a vm replay at its worst). Always inlined: GCC kept it out of line otherwise, a call
// per compare.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace stallscope {

namespace same_name_detail {
inline std::uint64_t load8(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline std::uint32_t load4(const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
}  // namespace same_name_detail

[[gnu::always_inline]] inline bool same_name(std::string_view a, std::string_view b) {
    using same_name_detail::load8;
    const std::size_t n = a.size();
    if (n != b.size()) return false;
    if (n < 8) {  // short names too (labels, severities): memcmp's call was most of their compare
        using same_name_detail::load4;
        if (n >= 4)
            return load4(a.data()) == load4(b.data()) && load4(a.data() + n - 4) == load4(b.data() + n - 4);
        for (std::size_t i = 0; i < n; ++i)
            if (a[i] != b[i]) return false;
        return true;
    }
    for (std::size_t i = 0; i + 8 <= n; i += 8)
        if (load8(a.data() + i) != load8(b.data() + i)) return false;
    return load8(a.data() + n - 8) == load8(b.data() + n - 8);  // the tail, overlapping the last chunk
}

// Writes `value` into `field` unless it already holds it: a kept finding's code, subject and label are
// the same sample after sample, and the compare costs less than the assign (and its strlen) it saves.
inline void assign_if_other(std::string& field, std::string_view value) {
    if (!same_name(field, value)) field.assign(value.data(), value.size());
}

}  // namespace stallscope
