#include "import/decimal_time.h"

#include <array>

namespace gpuattr::collector {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::optional<uint64_t> DecimalToScaledInteger(std::string_view text, int scale_digits) {
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
