// fuzz-smoke: replays every seed in a corpus directory, then N mutations of them (fixed seed, so
// a failure reproduces), through the same entry the libFuzzer target uses. Mutations: byte
// flips, truncation, duplicated and deleted slices, inserted JSON punctuation and numbers.
// Passes when nothing crashed (a crash or abort fails the ctest test) and every seed was
// accepted as a trace.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "import_fuzz_entry.h"

namespace {

std::string Mutate(std::string input, std::mt19937_64& random) {
  static const std::vector<std::string> kTokens = {
      "{", "}", "[", "]", ",", ":", "\"", "\\", "1e999", "-1", "0.0000001", "18446744073709551616",
      "\"ph\":\"X\"", "\"cat\":\"kernel\"", "\"correlation\":", "null", "\"ts\":", "\xff\xfe"};
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
        input.insert(at, kTokens[random() % kTokens.size()]);
        break;
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR MUTATIONS\n", argv[0]);
    return 2;
  }
  std::vector<std::string> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream file(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  std::sort(seeds.begin(), seeds.end());
  if (seeds.empty()) {
    std::fprintf(stderr, "no seeds in %s\n", argv[1]);
    return 1;
  }
  int failures = 0;
  for (const std::string& seed : seeds) {
    if (!gpuattr::fuzz::ImportKinetoBytes(reinterpret_cast<const uint8_t*>(seed.data()),
                                          seed.size())) {
      std::fprintf(stderr, "a seed was refused: %.80s\n", seed.c_str());
      ++failures;
    }
  }
  const long mutations = std::strtol(argv[2], nullptr, 10);
  std::mt19937_64 random(20240601);
  long accepted = 0;
  for (long i = 0; i < mutations; ++i) {
    const std::string input = Mutate(seeds[random() % seeds.size()], random);
    accepted += gpuattr::fuzz::ImportKinetoBytes(reinterpret_cast<const uint8_t*>(input.data()),
                                                 input.size());
  }
  std::printf("%zu seeds, %ld mutations (%ld accepted, %ld refused), %d seed failures\n",
              seeds.size(), mutations, accepted, mutations - accepted, failures);
  return failures == 0 ? 0 : 1;
}
