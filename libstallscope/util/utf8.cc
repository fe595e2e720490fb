#include "libstallscope/util/utf8.h"

namespace stallscope {

std::size_t utf8_sequence_length(const char* p, const char* end) {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
    const auto left = static_cast<std::size_t>(end - p);
    const unsigned char lead = at(0);
    std::size_t n;
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range, narrower after some leads
    if (lead >= 0xc2 && lead <= 0xdf) {
        n = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        n = 3;
        if (lead == 0xe0) low = 0xa0;
        if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        n = 4;
        if (lead == 0xf0) low = 0x90;
        if (lead == 0xf4) high = 0x8f;
    } else {
        return 0;
    }
    if (left < n || at(1) < low || at(1) > high) return 0;
    for (std::size_t i = 2; i < n; ++i)
        if (at(i) < 0x80 || at(i) > 0xbf) return 0;
    return n;
}

}  // namespace stallscope
