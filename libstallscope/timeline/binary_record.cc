#include "libstallscope/timeline/binary_record.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/detail/conversions/to_chars.hpp>

namespace stallscope {
namespace {

constexpr unsigned kLastByteBase = 127;  // a varint's last byte: 0..126, never '\n' as written
constexpr unsigned kMaxFractionDigits = 22;
constexpr unsigned kRawGaugeTag = 23;
constexpr std::uint64_t kExactMantissa = std::uint64_t{1} << 53;   // every integer below it is a double
constexpr std::uint64_t kMaxMantissa = 1'000'000'000'000'000'000;  // 19 digits: past any shortest text

// 10^0 .. 10^22: every one exactly a double, so m / 10^d is one correctly rounded division.
constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::int64_t unzigzag(std::uint64_t u) {
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

// mantissa / 10^fraction_digits, correctly rounded. Below 2^53 that is one division of two exact doubles
// (Clinger's fast path); above (17 significant digits, such as 30.213299999999997, which arithmetic on
// gauges gives) the decimal is spelled out and read by from_chars, which rounds correctly too.
[[gnu::noinline]] double spelled_decimal_value(std::int64_t mantissa, unsigned fraction_digits) {
    char text[48];  // "-999999999999999999e-22"
    char* end = std::to_chars(text, text + 24, mantissa).ptr;
    *end++ = 'e';
    *end++ = '-';
    end = std::to_chars(end, text + sizeof text, fraction_digits).ptr;
    double value = 0;
    std::from_chars(text, end, value);
    return value;
}

inline double decimal_value(std::int64_t mantissa, std::uint64_t magnitude, unsigned fraction_digits) {
    if (magnitude < kExactMantissa) return static_cast<double>(mantissa) / kPowersOfTen[fraction_digits];
    return spelled_decimal_value(mantissa, fraction_digits);
}

// The decimal the shortest round-trip text of `value` spells, without an exponent: 612.25 -> mantissa
// 61225, 2 fraction digits. False for an exponent form, -0, or more digits than kMaxMantissa.
bool decimal_of(double value, std::int64_t& mantissa, std::uint64_t& magnitude, unsigned& fraction_digits) {
    char text[64];
    const char* end = nlohmann::detail::to_chars(text, text + sizeof text, value);
    const char* p = text;
    const bool negative = p < end && *p == '-';
    if (negative) ++p;
    std::uint64_t digits = 0;
    unsigned fraction = 0, trailing_zeros = 0;
    bool in_fraction = false;
    for (; p < end; ++p) {
        if (*p == '.' && !in_fraction) {
            in_fraction = true;
            continue;
        }
        if (*p < '0' || *p > '9') return false;         // 'e': an exponent form
        if (digits >= kMaxMantissa / 10) return false;  // too many digits
        digits = digits * 10 + static_cast<unsigned>(*p - '0');
        if (in_fraction) {
            ++fraction;
            trailing_zeros = *p == '0' ? trailing_zeros + 1 : 0;
        }
    }
    for (; trailing_zeros > 0; --trailing_zeros, --fraction) digits /= 10;  // "612.0" is 612
    if (fraction > kMaxFractionDigits || (negative && digits == 0)) return false;
    mantissa = negative ? -static_cast<std::int64_t>(digits) : static_cast<std::int64_t>(digits);
    magnitude = digits;
    fraction_digits = fraction;
    return true;
}

// Returns the byte after the number, or null when the bytes are not one. Called for every number of
// every record: p by value (not kept in memory through a reference) and the overflow check only past
// 8 groups, where quotient x 127 + 126 can pass 64 bits.
inline const unsigned char* read_varint(const unsigned char* p, const unsigned char* end,
                                        std::uint64_t& value) {
    std::uint64_t quotient = 0;
    unsigned shift = 0;
    for (; p != end && *p >= 0x80; ++p, shift += 7) {
        if (shift > 56) return nullptr;  // more groups than a 64-bit number's quotient by 127 needs
        quotient |= static_cast<std::uint64_t>(*p & 0x7f) << shift;
    }
    if (p == end || *p == '\n') return nullptr;
    const unsigned last = *p++;
    const unsigned remainder = last - (last > '\n');
    if (shift > 49 && quotient > (UINT64_MAX - remainder) / kLastByteBase) return nullptr;
    value = quotient * kLastByteBase + remainder;
    return p;
}

const unsigned char* read_gauge(const unsigned char* p, const unsigned char* end, double& value) {
    std::uint64_t tag = 0, number = 0;
    if (!(p = read_varint(p, end, tag)) || !(p = read_varint(p, end, number))) return nullptr;
    if (tag == kRawGaugeTag) {
        std::memcpy(&value, &number, sizeof value);
        // A JSON "g" holds numbers only: NaN and infinities go in "set" as null, so none is taken here
        // either. (A decimal below is finite by construction: under 10^18 over at most 10^22.)
        return std::isfinite(value) ? p : nullptr;
    }
    const std::int64_t mantissa = unzigzag(number);
    const std::uint64_t magnitude =
        mantissa < 0 ? ~static_cast<std::uint64_t>(mantissa) + 1 : static_cast<std::uint64_t>(mantissa);
    if (tag > kMaxFractionDigits || magnitude >= kMaxMantissa) return nullptr;  // never written
    value = decimal_value(mantissa, magnitude, static_cast<unsigned>(tag));
    return p;
}

}  // namespace

void append_record_varint(std::string& out, std::uint64_t value) {
    std::uint64_t quotient = value / kLastByteBase;
    const auto remainder = static_cast<unsigned>(value % kLastByteBase);
    for (; quotient != 0; quotient >>= 7) out.push_back(static_cast<char>(0x80 | (quotient & 0x7f)));
    out.push_back(static_cast<char>(remainder < '\n' ? remainder : remainder + 1));
}

void append_record_delta(std::string& out, std::int64_t delta) {
    append_record_varint(out, zigzag(delta));
}

void append_record_gauge(std::string& out, double value) {
    std::int64_t mantissa = 0;
    std::uint64_t magnitude = 0;
    unsigned fraction = 0;
    // What the reader will compute, checked here, so a decimal is only ever written when it reads back as
    // this very double (correct rounding of a round-trip text makes that always so; this does not rely
    // on it).
    if (std::isfinite(value) && decimal_of(value, mantissa, magnitude, fraction)) {
        const double back = decimal_value(mantissa, magnitude, fraction);
        if (std::memcmp(&back, &value, sizeof value) == 0) {
            append_record_varint(out, fraction);
            append_record_varint(out, zigzag(mantissa));
            return;
        }
    }
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    append_record_varint(out, kRawGaugeTag);
    append_record_varint(out, bits);
}

bool read_binary_record(std::string_view text, PlainRecord& out) {
    // The lists are resized to each record's counts and every number written over: no clear(), which
    // made resize() zero them first.
    out.has_a = out.has_g = false;
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    std::uint64_t flags = 0, count = 0;
    if (p == end || *p++ != static_cast<unsigned char>(kBinaryRecordMarker) ||
        !(p = read_varint(p, end, flags)) ||
        (flags & ~std::uint64_t{kBinaryRecordHasA | kBinaryRecordHasG}) != 0)
        return false;
    if (flags & kBinaryRecordHasA) {
        // Each number takes at least a byte: a count past what is left is a damaged record, refused
        // before anything is reserved for it.
        if (!(p = read_varint(p, end, count)) || count > static_cast<std::uint64_t>(end - p)) return false;
        out.a.resize(count);
        for (auto& delta : out.a) {
            std::uint64_t u = 0;
            if (!(p = read_varint(p, end, u))) return false;
            delta = unzigzag(u);
        }
        out.has_a = true;
    }
    if (flags & kBinaryRecordHasG) {
        if (!(p = read_varint(p, end, count)) || count > static_cast<std::uint64_t>(end - p) / 2)
            return false;
        out.g.resize(count);
        for (auto& value : out.g)
            if (!(p = read_gauge(p, end, value))) return false;
        out.has_g = true;
    }
    return p == end;
}

}  // namespace stallscope
