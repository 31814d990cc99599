// Colour on a terminal (cli/cli.h): only on a terminal, never under NO_COLOR or TERM=dumb, and
// only the verdict words at the start of the gate's lines.
#include <catch2/catch.hpp>
#include <string>

#include "cli/cli.h"

namespace gpuattr::collector {
namespace {

TEST_CASE("Colour only on a terminal, and never under NO_COLOR or TERM=dumb", "[cli][colour]") {
  CHECK(ColourWanted(true, nullptr, "xterm-256color"));
  CHECK(ColourWanted(true, "", nullptr));  // NO_COLOR set but empty: as if unset
  CHECK_FALSE(ColourWanted(false, nullptr, "xterm"));
  CHECK_FALSE(ColourWanted(true, "1", "xterm"));
  CHECK_FALSE(ColourWanted(true, nullptr, "dumb"));
}

TEST_CASE("The gate's verdict words are coloured, the rest of the table left as it is",
          "[cli][colour]") {
  const std::string table =
      "gpuattr gate: FAIL (3 checks, 1 failed)\n\n"
      "VERDICT  METRIC  VALUE\n"
      "FAIL     a.b     2\n"
      "    rule: [plain bound] pass through\n"
      "pass     c.d     1\n"
      "n/a      e.f     n/a\n";
  CHECK(ColourVerdicts(table) ==
        "gpuattr gate: \x1b[1;31mFAIL\x1b[0m (3 checks, 1 failed)\n\n"
        "VERDICT  METRIC  VALUE\n"
        "\x1b[1;31mFAIL\x1b[0m     a.b     2\n"
        "    rule: [plain bound] pass through\n"
        "\x1b[32mpass\x1b[0m     c.d     1\n"
        "\x1b[2mn/a\x1b[0m      e.f     n/a\n");
  CHECK(ColourVerdicts("passes[x] 1\n") == "passes[x] 1\n");  // a word, not a prefix
}

}  // namespace
}  // namespace gpuattr::collector
