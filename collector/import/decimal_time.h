// Exact conversion of a JSON number's text into integer nanoseconds, for trace import.
//
// Chrome-trace timestamps are microseconds written as decimal text, often epoch-based
// (1.7e15 µs) with a nanosecond fraction ("1695835542514261.483"). A double holds 15–17
// significant digits, so parsing through one loses the nanoseconds; this parser never does. It
// works on the digits: value = D × 10^(exponent), scaled by 10^scale_digits (3 for µs → ns),
// with any sub-unit remainder truncated toward zero. Pure function; any thread.
#ifndef GPUATTR_COLLECTOR_IMPORT_DECIMAL_TIME_H_
#define GPUATTR_COLLECTOR_IMPORT_DECIMAL_TIME_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpuattr::collector {

// Longest number text accepted; longer is refused rather than scanned (hostile input).
inline constexpr size_t kMaxNumberChars = 64;

// `text` is a JSON number token (surrounding whitespace allowed): digits, optional fraction,
// optional exponent. Returns nullopt for a negative number, malformed text, text longer than
// kMaxNumberChars, or a result beyond uint64_t. Examples with scale_digits = 3:
// "12" -> 12000, "156.777" -> 156777, "1.5e3" -> 1500000, "0.0004" -> 0 (truncated).
std::optional<uint64_t> DecimalToScaledInteger(std::string_view text, int scale_digits);

// Microseconds text to nanoseconds (scale_digits = 3).
inline std::optional<uint64_t> MicrosecondsTextToNs(std::string_view text) {
  return DecimalToScaledInteger(text, 3);
}

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_DECIMAL_TIME_H_
