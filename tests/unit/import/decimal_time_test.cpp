#include "import/decimal_time.h"

#include <catch2/catch.hpp>
#include <string>

namespace gpuattr::collector {
namespace {

TEST_CASE("Microsecond text becomes exact nanoseconds", "[import][time]") {
  CHECK(MicrosecondsTextToNs("12") == 12000u);
  CHECK(MicrosecondsTextToNs("156.777") == 156777u);
  CHECK(MicrosecondsTextToNs("68.0") == 68000u);
  CHECK(MicrosecondsTextToNs("0") == 0u);
  CHECK(MicrosecondsTextToNs(" 7.5 ") == 7500u);
  // An epoch timestamp with a nanosecond fraction: a double would round the last digits.
  CHECK(MicrosecondsTextToNs("1695835542514261.483") == 1695835542514261483u);
  CHECK(MicrosecondsTextToNs("4458676522690.655") == 4458676522690655u);
}

TEST_CASE("Exponent forms are exact and sub-nanosecond digits truncate", "[import][time]") {
  CHECK(MicrosecondsTextToNs("1.5e3") == 1500000u);
  CHECK(MicrosecondsTextToNs("1.695835542514261483E15") == 1695835542514261483u);
  CHECK(MicrosecondsTextToNs("2e-3") == 2u);
  CHECK(MicrosecondsTextToNs("0.0004") == 0u);
  CHECK(MicrosecondsTextToNs("1.0009") == 1000u);
  CHECK(MicrosecondsTextToNs("5e-400") == 0u);
  CHECK(MicrosecondsTextToNs("5e2000") == std::nullopt);  // exponent beyond any meaning
}

TEST_CASE("Malformed, negative and overflowing numbers are refused", "[import][time]") {
  for (const char* text : {"", "-1", "+1", ".", "1.", "1e", "1e+", "abc", "1x", "0x10", "1..2",
                           "18446744073709551616", "1e30"}) {
    INFO(text);
    CHECK(MicrosecondsTextToNs(text) == std::nullopt);
  }
  CHECK(DecimalToScaledInteger("18446744073709551615", 0) == 18446744073709551615u);
  CHECK(MicrosecondsTextToNs(std::string(200, '1')) == std::nullopt);
}

// Plain decimals (digits, an optional fraction) take a one-pass path; a leading space sends the
// same text the general way, so each pair below compares the two, across the 19-digit boundary
// where the plain path hands over.
TEST_CASE("The plain-decimal path agrees with the general one", "[import][time]") {
  for (const char* text :
       {"0", "7", "00012", "12.5", "1695835542514261.483", "1695835542514261.4839", "1.000000001",
        "9999999999999999", "9999999999999999.999", "99999999999999999", "18446744073709551.615",
        "18446744073709551.616", "0000000000000000000012", "0.0004", "1.", ".5", "1.2.3", "12a"}) {
    for (int scale_digits : {0, 3, 9}) {
      INFO(text << " scale " << scale_digits);
      CHECK(DecimalToScaledInteger(text, scale_digits) ==
            DecimalToScaledInteger(std::string(" ") + text, scale_digits));
    }
  }
  CHECK(MicrosecondsTextToNs("9999999999999999.999") == 9999999999999999999u);
  CHECK(MicrosecondsTextToNs("18446744073709551.615") == 18446744073709551615u);
  CHECK(MicrosecondsTextToNs("18446744073709551.616") == std::nullopt);
}

}  // namespace
}  // namespace gpuattr::collector
