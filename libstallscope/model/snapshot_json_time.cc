// RFC 3339 text of the snapshot's time (snapshot_json.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

void append_rfc3339(std::string& out, double epoch_seconds) {
    // Years 0001-9999 only (four digits): a hand-edited or corrupt timeline's 1e29 must not reach the
    // time_t conversion, which is undefined behaviour out of range (found by fuzzing replay).
    constexpr double kFirst = -62135596800.0, kLast = 253402300799.0;  // 0001-01-01, 9999-12-31T23:59:59
    if (!std::isfinite(epoch_seconds)) epoch_seconds = 0;
    epoch_seconds = std::clamp(epoch_seconds, kFirst, kLast);
    double whole = std::floor(epoch_seconds);
    int millis = static_cast<int>(std::lround((epoch_seconds - whole) * 1000.0));
    if (millis == 1000) {
        whole += 1;
        millis = 0;
    }
    // Samples come in order, each within the minute of the last: "YYYY-MM-DDTHH:MM:" is kept per thread
    // and only the seconds are written (gmtime_r and snprintf took ~0.2 us, a tenth of reading a sample).
    struct Minute {
        double start = std::numeric_limits<double>::quiet_NaN();  // matches nothing
        char text[18] = {};
    };
    thread_local Minute minute;
    const double minute_start = std::floor(whole / 60) * 60;
    if (minute_start != minute.start) {
        const std::time_t t = static_cast<std::time_t>(minute_start);
        std::tm tm{};
        ::gmtime_r(&t, &tm);
        char buf[96];  // room for any int the compiler cannot rule out (-Wformat-truncation)
        // 17 characters: the clamp above keeps the year within four digits.
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:", tm.tm_year + 1900, tm.tm_mon + 1,
                      tm.tm_mday, tm.tm_hour, tm.tm_min);
        std::memcpy(minute.text, buf, 17);
        minute.start = minute_start;
    }
    const int seconds = static_cast<int>(whole - minute_start);  // 0..59
    const char tail[] = {static_cast<char>('0' + seconds / 10),
                         static_cast<char>('0' + seconds % 10),
                         '.',
                         static_cast<char>('0' + millis / 100),
                         static_cast<char>('0' + millis / 10 % 10),
                         static_cast<char>('0' + millis % 10),
                         'Z'};
    out.append(minute.text, 17);
    out.append(tail, sizeof tail);
}

std::string format_rfc3339(double epoch_seconds) {
    std::string text;
    append_rfc3339(text, epoch_seconds);
    return text;
}

std::string format_clock_time(double epoch_seconds) {
    const std::string s = format_rfc3339(epoch_seconds);  // 2026-11-22T05:00:00.000Z
    return s.size() >= 19 ? s.substr(11, 8) : s;
}

std::optional<double> parse_rfc3339(const std::string& text) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    double fraction = 0;
    std::size_t pos = static_cast<std::size_t>(consumed);
    if (pos < text.size() && text[pos] == '.') {
        double scale = 0.1;
        for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, scale /= 10)
            fraction += (text[pos] - '0') * scale;
    }
    const std::string zone = text.substr(pos);
    if (zone != "Z" && zone != "+00:00" && zone != "z") return std::nullopt;
    return static_cast<double>(::timegm(&tm)) + fraction;
}

}  // namespace stallscope
