// Writes the wire fuzz target's seed corpus (corpus/wire/): real-looking connections encoded
// with wire::MessageWriter through the unit tests' helpers, framed as wire_fuzz_entry.h reads
// them. Run by hand when the protocol changes: `gpuattr_wire_fuzz_seeds tests/fuzz/corpus/wire`.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "wire_fuzz_entry.h"
#include "wire_test_util.h"

namespace {

using gpuattr::collector::testing::MakeClone;
using gpuattr::collector::testing::MakeGraphNode;
using gpuattr::collector::testing::MakeHello;
using gpuattr::collector::testing::MakeKernel;
using gpuattr::collector::testing::MakeLaunch;
using gpuattr::collector::testing::MakeMemcpy;
using gpuattr::collector::testing::MakeNode;
using gpuattr::collector::testing::Message;
namespace wire = gpuattr::wire;

using Datagrams = std::vector<std::vector<uint8_t>>;

// A step with a forward and a backward range, one kernel each, and a clean Goodbye.
Datagrams NestedRanges() {
  Datagrams datagrams;
  datagrams.push_back(Message()
                          .Add(MakeHello(4242, 0))
                          .Str(1, "step")
                          .Str(2, "forward")
                          .Str(3, "backward")
                          .Str(4, "_Z10gemm_kernelPfS_")
                          .Add(MakeNode(1, 0, 1))
                          .Add(MakeNode(2, 1, 2))
                          .Add(MakeNode(3, 1, 3))
                          .Bytes(0));
  datagrams.push_back(Message()
                          .Push(100, 7, 1)
                          .Push(110, 7, 2)
                          .Add(MakeLaunch(1, 120, 7, 2))
                          .Pop(200, 7, 2)
                          .Push(210, 7, 3)
                          .Add(MakeLaunch(2, 220, 7, 3))
                          .Pop(400, 7, 3)
                          .Pop(410, 7, 1)
                          .Bytes(1));
  const wire::Goodbye goodbye{500, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0};
  datagrams.push_back(Message()
                          .Add(MakeKernel(1, 130, 190, 7, 4))
                          .Add(MakeKernel(2, 230, 390, 7, 4))
                          .Add(goodbye)
                          .Bytes(2));
  return datagrams;
}

// A copy and a graph launch whose node was cloned; the stream ends without Goodbye (truncated).
Datagrams GraphAndCopyTruncated() {
  Datagrams datagrams;
  datagrams.push_back(Message()
                          .Add(MakeHello(77))
                          .Str(1, "train")
                          .Str(2, "graph_kernel")
                          .Add(MakeNode(1, 0, 1))
                          .Push(10, 1, 1)
                          .Add(MakeGraphNode(900, 5, 1))
                          .Add(MakeClone(901, 900))
                          .Add(MakeLaunch(6, 20, 1, 1, wire::ApiKind::kMemcpy))
                          .Add(MakeLaunch(7, 30, 1, 1, wire::ApiKind::kGraph))
                          .Bytes(0));
  datagrams.push_back(Message()
                          .Add(MakeMemcpy(6, 25, 45, 3))
                          .Add(MakeKernel(7, 50, 90, 3, 2, 901))
                          .Pop(100, 1, 1)
                          .Bytes(1));
  return datagrams;
}

// Launch and kernel timestamps on either side of 2^63 (the campaign's one finding: a latency
// sample that overflowed when each timestamp was cast to int64 before subtracting).
Datagrams TimestampsAcrossTheSignBit() {
  constexpr uint64_t kHalf = uint64_t{1} << 63;
  Datagrams datagrams;
  datagrams.push_back(Message()
                          .Add(MakeHello(31))
                          .Str(1, "gemm")
                          .Add(MakeLaunch(1, kHalf, 1, 0))
                          .Add(MakeKernel(1, kHalf - 1, kHalf + 9, 7, 1))
                          .Add(MakeLaunch(2, 1, 1, 0))
                          .Add(MakeKernel(2, kHalf + 10, kHalf + 20, 7, 1))
                          .Bytes(0));
  return datagrams;
}

// The FLOP counter (issue 22): its marks (counted, free, unknown ops, another domain's value mark)
// on a forward and, from another thread, a backward range of two steps, and its counting mark.
Datagrams FlopCounter() {
  Datagrams datagrams;
  datagrams.push_back(Message()
                          .Add(MakeHello(99))
                          .Str(1, "ProfilerStep#0")
                          .Str(2, "forward")
                          .Str(3, "gpuattr.flops")
                          .Str(4, "gpuattr.bytes")
                          .Str(5, "gpuattr.ops")
                          .Str(6, "aten::mm float32")
                          .Str(7, "free aten::view")
                          .Str(8, "unknown aten::erfinv")
                          .Str(9, "gpuattr.flops: counting (rules: flop_rules.json)")
                          .Str(10, "app")
                          .Add(MakeNode(1, 0, 1))
                          .Add(MakeNode(2, 1, 2))
                          .Add(wire::Mark{5, 7, 9, 0, 0})
                          .Bytes(0));
  datagrams.push_back(Message()
                          .Push(100, 7, 1)
                          .Push(110, 7, 2)
                          .Add(wire::ValueMark{120, 7, 6, 3, 2, 4096})
                          .Add(wire::ValueMark{120, 7, 6, 4, 2, 1536})
                          .Add(wire::ValueMark{121, 7, 7, 5, 2, 1})
                          .Add(wire::ValueMark{122, 7, 8, 5, 2, 1})
                          .Add(wire::ValueMark{123, 7, 10, 10, 2, 512})
                          .Pop(200, 7, 2)
                          .Add(wire::ValueMark{300, 8, 6, 3, 1, 8192})
                          .Pop(410, 7, 1)
                          .Add(wire::ValueMark{500, 7, 6, 3, 0, 64})
                          .Bytes(1));
  const wire::Goodbye goodbye{600, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0};
  datagrams.push_back(Message().Add(goodbye).Bytes(2));
  return datagrams;
}

bool Write(const std::string& path, const Datagrams& datagrams) {
  const std::vector<uint8_t> bytes = gpuattr::fuzz::FrameDatagrams(datagrams);
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(file);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = Write(dir + "/nested_ranges.bin", NestedRanges()) &&
                  Write(dir + "/graph_copy_truncated.bin", GraphAndCopyTruncated()) &&
                  Write(dir + "/timestamps_across_sign_bit.bin", TimestampsAcrossTheSignBit()) &&
                  Write(dir + "/flop_counter.bin", FlopCounter());
  return ok ? 0 : 1;
}
