#include "fuzz_smoke.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace gpuattr::fuzz {

namespace {

std::string Mutate(std::string input, const std::vector<std::string>& tokens,
                   std::mt19937_64& random) {
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int e = 0; e < edits && !input.empty(); ++e) {
    const size_t at = random() % input.size();
    switch (random() % 5) {
      case 0:
        input[at] = static_cast<char>(input[at] ^ (1u << (random() % 8)));
        break;
      case 1:
        input.resize(at);
        break;
      case 2: {
        const size_t length = std::min<size_t>(random() % 64, input.size() - at);
        input.insert(random() % input.size(), input.substr(at, length));
        break;
      }
      case 3:
        input.erase(at, std::min<size_t>(random() % 32, input.size() - at));
        break;
      default:
        input.insert(at, tokens[random() % tokens.size()]);
        break;
    }
  }
  return input;
}

bool Run(FuzzEntry entry, const std::string& input) {
  return entry(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int RunFuzzSmoke(int argc, char** argv, FuzzEntry entry, const std::vector<std::string>& tokens) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR MUTATIONS\n", argv[0]);
    return 2;
  }
  std::vector<std::string> seeds;
  for (const auto& file_entry : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream file(file_entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  std::sort(seeds.begin(), seeds.end());
  if (seeds.empty() || tokens.empty()) {
    std::fprintf(stderr, "no seeds in %s, or no tokens\n", argv[1]);
    return 1;
  }
  int failures = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (!Run(entry, seeds[i])) {
      std::fprintf(stderr, "seed %zu (in sorted order) was refused\n", i);
      ++failures;
    }
  }
  const long mutations = std::strtol(argv[2], nullptr, 10);
  std::mt19937_64 random(20240601);
  long accepted = 0;
  for (long i = 0; i < mutations; ++i) {
    accepted += Run(entry, Mutate(seeds[random() % seeds.size()], tokens, random));
  }
  std::printf("%zu seeds, %ld mutations (%ld accepted, %ld refused), %d seed failures\n",
              seeds.size(), mutations, accepted, mutations - accepted, failures);
  return failures == 0 ? 0 : 1;
}

std::vector<std::string> JsonTokens(std::vector<std::string> extra) {
  std::vector<std::string> tokens = {"{", "}", "[", "]", ",", ":", "\""};
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  return tokens;
}

std::vector<std::string> ReportFileTokens() {
  return JsonTokens({"\\u0007", "1e999", "-1", "-9223372036854775809", "18446744073709551616",
                     "null", "\"\"", "[[[[[[[[", "{\"a\":{}}", "\xe2\x80\xa6", "\xff"});
}

}  // namespace gpuattr::fuzz
