#include "import/decimal_time.h"

#include <array>

namespace gpuattr::collector {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The text every trace writes, digits with an optional fraction, in one pass: false for any other
// shape (spaces, signs, an exponent, a negative scale) and for more than 19 digits kept (leading
// zeros count), which the general path takes. Whatever it accepts, the general path would
// convert to the same value: the fraction's digits past the scale are truncated.
bool PlainDecimalToScaledInteger(std::string_view text, int scale_digits, uint64_t* out) {
  constexpr int kDigitsThatFit = 19;  // any 19 decimal digits fit a uint64_t
  if (scale_digits < 0 || text.size() > kMaxNumberChars) return false;
  uint64_t value = 0;
  int kept = 0;
  size_t at = 0;
  for (; at < text.size() && IsDigit(text[at]); ++at, ++kept) {
    value = value * 10 + static_cast<uint64_t>(text[at] - '0');
  }
  if (at == 0 || kept > kDigitsThatFit) return false;
  int fraction_kept = 0;
  if (at < text.size() && text[at] == '.') {
    const size_t fraction_begin = ++at;
    for (; at < text.size() && IsDigit(text[at]); ++at) {
      if (fraction_kept == scale_digits) continue;
      value = value * 10 + static_cast<uint64_t>(text[at] - '0');
      ++fraction_kept;
    }
    if (at == fraction_begin) return false;
  }
  if (at != text.size() || kept + scale_digits > kDigitsThatFit) return false;
  for (; fraction_kept < scale_digits; ++fraction_kept) value *= 10;
  *out = value;
  return true;
}

}  // namespace

std::optional<uint64_t> DecimalToScaledInteger(std::string_view text, int scale_digits) {
  if (uint64_t value = 0; PlainDecimalToScaledInteger(text, scale_digits, &value)) return value;
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  if (text.empty() || text.size() > kMaxNumberChars) return std::nullopt;

  // Significant digits (leading zeros dropped) and how many of them follow the decimal point.
  std::array<char, kMaxNumberChars> digits{};
  int digit_count = 0;
  int fraction_digits = 0;
  size_t at = 0;
  if (text[at] == '+' || text[at] == '-') return std::nullopt;  // JSON has no '+'; '-' is refused
  bool any_digit = false;
  for (; at < text.size() && IsDigit(text[at]); ++at) {
    any_digit = true;
    if (digit_count == 0 && text[at] == '0') continue;
    digits[static_cast<size_t>(digit_count++)] = text[at];
  }
  if (at < text.size() && text[at] == '.') {
    ++at;
    bool fraction_digit = false;
    for (; at < text.size() && IsDigit(text[at]); ++at) {
      fraction_digit = true;
      ++fraction_digits;
      if (digit_count == 0 && text[at] == '0') continue;
      digits[static_cast<size_t>(digit_count++)] = text[at];
    }
    if (!fraction_digit) return std::nullopt;
  }
  if (!any_digit && fraction_digits == 0) return std::nullopt;
  int exponent = 0;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    bool negative = false;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) negative = text[at++] == '-';
    if (at == text.size()) return std::nullopt;
    for (; at < text.size() && IsDigit(text[at]); ++at) {
      exponent = exponent * 10 + (text[at] - '0');
      if (exponent > 1000) return std::nullopt;  // far beyond any uint64_t or any sub-unit
    }
    if (negative) exponent = -exponent;
  }
  if (at != text.size()) return std::nullopt;

  // value = digits × 10^power, truncated toward zero.
  const int power = exponent - fraction_digits + scale_digits;
  int keep = digit_count;
  if (power < 0) keep = digit_count + power;
  if (keep <= 0) return uint64_t{0};
  uint64_t value = 0;
  for (int i = 0; i < keep; ++i) {
    if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(digits[static_cast<size_t>(i)] - '0'),
                               &value)) {
      return std::nullopt;
    }
  }
  for (int i = 0; i < power; ++i) {
    if (value == 0) break;
    if (__builtin_mul_overflow(value, uint64_t{10}, &value)) return std::nullopt;
  }
  return value;
}

}  // namespace gpuattr::collector
