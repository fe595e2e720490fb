// A process's exec-time environment as /proc/<pid>/environ holds it: NUL-separated NAME=VALUE entries,
// the last one with or without its NUL. One walk for every reader of it (ranks, flight-recorder paths,
// the job's processes); entries without '=' are skipped.
#pragma once

#include <algorithm>
#include <string_view>

namespace stallscope {

template <class Visit>  // void(std::string_view name, std::string_view value)
void for_each_environ_entry(std::string_view block, Visit&& visit) {
    while (!block.empty()) {
        const std::size_t end = std::min(block.find('\0'), block.size());
        const std::string_view entry = block.substr(0, end);
        block.remove_prefix(end == block.size() ? end : end + 1);
        const std::size_t eq = entry.find('=');
        if (eq != std::string_view::npos) visit(entry.substr(0, eq), entry.substr(eq + 1));
    }
}

}  // namespace stallscope
