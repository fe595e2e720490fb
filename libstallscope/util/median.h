// The median of a list of values, shared by the rules, the NCCL Inspector source and the job merge (one
// definition: the sanitizer build compiles the library as a unity build, where same-named file-local
// helpers collide).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace stallscope {

// The middle value, or the mean of the two middle values of an even count; 0 for no values. Takes the
// vector by value: it is partly reordered.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    if (v.size() % 2) return *mid;
    return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

}  // namespace stallscope
