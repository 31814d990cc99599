// Streaming reader for Chrome-trace JSON (the format of PyTorch profiler / Kineto traces): finds
// each element of the top-level "traceEvents" array without building a DOM of the file, so
// memory stays bounded by the largest single event, not by the file.
//
// A ByteSource yields the decompressed bytes in chunks (GzipFileSource reads .json and .json.gz
// alike through zlib's gzread; MemorySource serves tests and the fuzz target). The splitter
// scans those chunks by bracket depth, minding strings and escapes, and hands each event
// object's text to the handler, which parses it (simdjson On-Demand). An event is scanned 64
// bytes at a time (bit masks of its quotes and brackets; SSE2 where there is SSE2), a byte at a
// time only where a block holds a backslash and at the end of the window. Top-level members other
// than traceEvents are handed over whole (they are small: distributedInfo, baseTimeNanoseconds).
//
// Hostile input: depth is capped (kMaxJsonDepth) and so is any one value (kMaxValueBytes);
// nothing recurses, so no input can exhaust the stack or loop forever (every step consumes input
// or ends). A bare top-level array of events (also Chrome-trace) is accepted.
//
// Single-threaded; runs on the main thread.
#ifndef GPUATTR_COLLECTOR_IMPORT_JSON_EVENT_STREAM_H_
#define GPUATTR_COLLECTOR_IMPORT_JSON_EVENT_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr size_t kMaxJsonDepth = 256;
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;
// Bytes readable past the end of every event handed to TraceEventHandler::OnEvent (their values
// are whatever follows in the splitter's window), so a parser that reads ahead can parse the
// event where it lies.
inline constexpr size_t kEventPaddingBytes = 64;

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `capacity` bytes into `out`; 0 at the end; an error when the input is unreadable or,
  // for gzip, truncated or corrupt.
  virtual StatusOr<size_t> Read(char* out, size_t capacity) = 0;
};

// A file, gzip-compressed or not (zlib detects which), decompressed as a stream.
class GzipFileSource : public ByteSource {
 public:
  static StatusOr<std::unique_ptr<GzipFileSource>> Open(const std::string& path);
  ~GzipFileSource() override;
  StatusOr<size_t> Read(char* out, size_t capacity) override;

 private:
  GzipFileSource(void* file, std::string path) : file_(file), path_(std::move(path)) {}
  void* file_;  // gzFile
  std::string path_;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  StatusOr<size_t> Read(char* out, size_t capacity) override;

 private:
  std::string_view bytes_;
};

class TraceEventHandler {
 public:
  virtual ~TraceEventHandler() = default;
  // One element of traceEvents (its text is an object: starts with '{', brackets balanced),
  // followed by kEventPaddingBytes readable bytes.
  virtual Status OnEvent(std::string_view object_text) = 0;
  // A top-level member other than traceEvents; `key` is its raw (escaped) text.
  virtual Status OnTopLevel(std::string_view key, std::string_view value_text) = 0;
};

// Reads `source` to its end, calling `handler`. kDataLoss for input that is not a Chrome trace
// (with the byte offset), and whatever the handler or the source returned.
Status SplitTraceEvents(ByteSource* source, TraceEventHandler* handler, uint64_t* bytes_read);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_JSON_EVENT_STREAM_H_
