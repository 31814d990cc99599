#include "import/json_event_stream.h"

#include <zlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

namespace gpuattr::collector {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// An event's bytes are scanned 64 at a time: one bit per byte for quotes, backslashes, opening
// brackets ('{', '[') and closing ones.
constexpr size_t kBlockBytes = 64;

struct BlockMasks {
  uint64_t quote = 0;
  uint64_t backslash = 0;
  uint64_t open = 0;
  uint64_t close = 0;
};

BlockMasks ClassifyBlock(const char* bytes) {
  BlockMasks masks;
#if defined(__SSE2__)
  // '[' | 0x20 is '{' and ']' | 0x20 is '}', and no other byte folds onto either.
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  for (size_t part = 0; part < kBlockBytes / 16; ++part) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * part));
    const __m128i folded = _mm_or_si128(v, fold);
    const auto bits = [&](__m128i equal) {
      return uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(equal))} << (16 * part);
    };
    masks.quote |= bits(_mm_cmpeq_epi8(v, quote));
    masks.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    masks.open |= bits(_mm_cmpeq_epi8(folded, open));
    masks.close |= bits(_mm_cmpeq_epi8(folded, close));
  }
#else
  for (size_t i = 0; i < kBlockBytes; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    const char c = bytes[i];
    if (c == '"') masks.quote |= bit;
    if (c == '\\') masks.backslash |= bit;
    if (c == '{' || c == '[') masks.open |= bit;
    if (c == '}' || c == ']') masks.close |= bit;
  }
#endif
  return masks;
}

// Bit i of the result: the parity of bits 0..i of `bits`.
uint64_t PrefixXor(uint64_t bits) {
  for (int shift = 1; shift < 64; shift *= 2) bits ^= bits << shift;
  return bits;
}

// Bracket depth through a value that may span several windows, minding strings and escapes.
// Brackets are only counted; the handler's parser validates.
struct BracketScan {
  enum Result { kMore, kDone, kTooDeep };

  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;  // in a string, after a backslash: the next byte is escaped

  Result Byte(char c) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      return kMore;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return kTooDeep;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return kDone;
    }
    return kMore;
  }

  // A block without backslashes (and not after one) at *offset: kMore moves *offset past it,
  // kDone just past the closing bracket (kTooDeep leaves it).
  Result Block(const BlockMasks& block, size_t* offset) {
    // A byte is in a string when an odd number of quotes precede it or sit on it (a string's
    // opening quote is in it, its closing quote is not; brackets are never quotes).
    const uint64_t in_strings = PrefixXor(block.quote) ^ (in_string ? ~uint64_t{0} : 0);
    in_string = (in_strings >> 63) != 0;
    for (uint64_t brackets = (block.open | block.close) & ~in_strings; brackets != 0;
         brackets &= brackets - 1) {
      const int bit = std::countr_zero(brackets);
      if ((block.open >> bit) & 1) {
        if (++depth > kMaxJsonDepth) return kTooDeep;
      } else if (--depth == 0) {
        *offset += static_cast<size_t>(bit) + 1;
        return kDone;
      }
    }
    *offset += kBlockBytes;
    return kMore;
  }
};

// A sliding window over the source: [begin_, end_) of buffer_ holds bytes not yet consumed.
class Splitter {
 public:
  Splitter(ByteSource* source, TraceEventHandler* handler) : source_(source), handler_(handler) {}

  Status Run() {
    GPUATTR_RETURN_IF_ERROR(SkipSpace());
    if (!Fill(0)) return Failure("the input is empty");
    if (Peek() == '[') {
      GPUATTR_RETURN_IF_ERROR(EventArray());
    } else if (Peek() == '{') {
      GPUATTR_RETURN_IF_ERROR(TopObject());
    } else {
      return Failure("not JSON: expected '{' or '['");
    }
    GPUATTR_RETURN_IF_ERROR(SkipSpace());
    if (Fill(0)) return Failure("unexpected data after the end of the JSON document");
    return error_;
  }

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  // Makes buffer_[begin_ + i] available; false at the end of input (or on a read error).
  bool Fill(size_t i) {
    while (end_ - begin_ <= i) {
      if (eof_) return false;
      if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      if (buffer_.size() - end_ < kChunkBytes + kEventPaddingBytes) {
        buffer_.resize(end_ + kChunkBytes + kEventPaddingBytes);
      }
      StatusOr<size_t> got = source_->Read(buffer_.data() + end_, kChunkBytes);
      if (!got.ok()) {
        error_ = got.status();
        eof_ = true;
        return false;
      }
      if (*got == 0) {
        eof_ = true;
        return false;
      }
      end_ += *got;
      bytes_read_ += *got;
    }
    return true;
  }

  char Peek() const { return buffer_[begin_]; }
  void Consume(size_t n) {
    begin_ += n;
    offset_ += n;
  }

  Status Failure(const std::string& what) const {
    if (!error_.ok()) return error_;
    return DataLossError(what + " (at byte " + std::to_string(offset_) + " of the JSON)");
  }
  Status Truncated() const { return Failure("truncated: the JSON ends inside a value"); }

  Status SkipSpace() {
    while (Fill(0) && IsSpace(Peek())) Consume(1);
    return error_;
  }

  Status Expect(char c, const char* what) {
    GPUATTR_RETURN_IF_ERROR(SkipSpace());
    if (!Fill(0)) return Truncated();
    if (Peek() != c) return Failure(std::string("expected ") + what);
    Consume(1);
    return Status::Ok();
  }

  // The length of the JSON value at begin_ (whitespace already skipped); on success the whole
  // value is in the window. Brackets are only counted here; the handler's parser validates.
  Status ScanValue(size_t* length) {
    if (!Fill(0)) return Truncated();
    const char first = Peek();
    size_t i = 0;
    if (first == '"') {
      for (i = 1;; ++i) {
        if (!Fill(i)) return Truncated();
        if (i > kMaxValueBytes) return Failure("a string longer than 64 MiB");
        const char c = buffer_[begin_ + i];
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          *length = i + 1;
          return Status::Ok();
        }
      }
    }
    if (first != '{' && first != '[') {
      while (Fill(i) && !IsSpace(buffer_[begin_ + i]) && buffer_[begin_ + i] != ',' &&
             buffer_[begin_ + i] != '}' && buffer_[begin_ + i] != ']') {
        if (++i > kMaxValueBytes) return Failure("a value longer than 64 MiB");
      }
      if (!error_.ok()) return error_;
      if (i == 0) return Failure("expected a value");
      *length = i;
      return Status::Ok();
    }
    BracketScan scan;
    for (;;) {
      if (!Fill(i)) return Truncated();
      if (i > kMaxValueBytes) return Failure("an event or value larger than 64 MiB");
      const char* data = buffer_.data() + begin_;
      const size_t available = end_ - begin_;
      while (i < available) {
        const bool whole_block = available - i >= kBlockBytes;
        const bool by_block = whole_block && !scan.escaped;
        const BlockMasks block = by_block ? ClassifyBlock(data + i) : BlockMasks{};
        BracketScan::Result result = BracketScan::kMore;
        if (by_block && block.backslash == 0) {
          result = scan.Block(block, &i);
        } else {
          // Escapes, and the window's last bytes: a byte at a time.
          const size_t stop = whole_block ? i + kBlockBytes : available;
          while (i < stop && (result = scan.Byte(data[i++])) == BracketScan::kMore) {
          }
        }
        if (result == BracketScan::kDone) {
          *length = i;
          return Status::Ok();
        }
        if (result == BracketScan::kTooDeep) return Failure("JSON nested deeper than 256 levels");
      }
    }
  }

  Status TopObject() {
    Consume(1);  // '{'
    GPUATTR_RETURN_IF_ERROR(SkipSpace());
    if (Fill(0) && Peek() == '}') return Failure("the JSON object has no traceEvents");
    bool saw_events = false;
    for (;;) {
      GPUATTR_RETURN_IF_ERROR(SkipSpace());
      if (!Fill(0)) return Truncated();
      if (Peek() != '"') return Failure("expected a member name");
      size_t key_length = 0;
      GPUATTR_RETURN_IF_ERROR(ScanValue(&key_length));
      const std::string key(buffer_.data() + begin_ + 1, key_length - 2);
      Consume(key_length);
      GPUATTR_RETURN_IF_ERROR(Expect(':', "':' after a member name"));
      GPUATTR_RETURN_IF_ERROR(SkipSpace());
      if (key == "traceEvents") {
        if (!Fill(0)) return Truncated();
        if (Peek() != '[') return Failure("traceEvents is not an array");
        GPUATTR_RETURN_IF_ERROR(EventArray());
        saw_events = true;
      } else {
        size_t length = 0;
        GPUATTR_RETURN_IF_ERROR(ScanValue(&length));
        GPUATTR_RETURN_IF_ERROR(
            handler_->OnTopLevel(key, std::string_view(buffer_.data() + begin_, length)));
        Consume(length);
      }
      GPUATTR_RETURN_IF_ERROR(SkipSpace());
      if (!Fill(0)) return Truncated();
      if (Peek() == '}') {
        Consume(1);
        break;
      }
      if (Peek() != ',') return Failure("expected ',' or '}' after a member");
      Consume(1);
    }
    if (!saw_events) return Failure("the JSON object has no traceEvents");
    return Status::Ok();
  }

  Status EventArray() {
    Consume(1);  // '['
    GPUATTR_RETURN_IF_ERROR(SkipSpace());
    if (!Fill(0)) return Truncated();
    if (Peek() == ']') {
      Consume(1);
      return Status::Ok();
    }
    for (;;) {
      GPUATTR_RETURN_IF_ERROR(SkipSpace());
      if (!Fill(0)) return Truncated();
      if (Peek() != '{') return Failure("an element of traceEvents is not an object");
      size_t length = 0;
      GPUATTR_RETURN_IF_ERROR(ScanValue(&length));
      Status status = handler_->OnEvent(std::string_view(buffer_.data() + begin_, length));
      if (!status.ok()) {
        return DataLossError(status.message() + " (event at byte " + std::to_string(offset_) +
                             " of the JSON)");
      }
      Consume(length);
      GPUATTR_RETURN_IF_ERROR(SkipSpace());
      if (!Fill(0)) return Truncated();
      if (Peek() == ']') {
        Consume(1);
        return Status::Ok();
      }
      if (Peek() != ',') return Failure("expected ',' or ']' between events");
      Consume(1);
    }
  }

  ByteSource* source_;
  TraceEventHandler* handler_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  uint64_t offset_ = 0;  // bytes consumed, for messages
  uint64_t bytes_read_ = 0;
  bool eof_ = false;
  Status error_;  // the source's error, once it failed
};

}  // namespace

StatusOr<std::unique_ptr<GzipFileSource>> GzipFileSource::Open(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return DataLossError("cannot open " + path + ": " +
                         (errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file, 256 * 1024);
  return std::unique_ptr<GzipFileSource>(new GzipFileSource(file, path));
}

GzipFileSource::~GzipFileSource() { gzclose(static_cast<gzFile>(file_)); }

StatusOr<size_t> GzipFileSource::Read(char* out, size_t capacity) {
  const int got = gzread(static_cast<gzFile>(file_), out, static_cast<unsigned>(capacity));
  if (got < 0) {
    int code = 0;
    const char* message = gzerror(static_cast<gzFile>(file_), &code);
    return DataLossError("cannot read " + path_ + ": " + (message != nullptr ? message : "?"));
  }
  if (got == 0) {
    // gzread returns 0 both at a clean end and at a truncated gzip member; gzerror tells them
    // apart (Z_BUF_ERROR: "unexpected end of file").
    int code = 0;
    const char* message = gzerror(static_cast<gzFile>(file_), &code);
    if (code != Z_OK) {
      return DataLossError("cannot read " + path_ + ": " +
                           (message != nullptr ? message : "corrupt gzip data") +
                           " (truncated or corrupt gzip)");
    }
  }
  return static_cast<size_t>(got);
}

StatusOr<size_t> MemorySource::Read(char* out, size_t capacity) {
  const size_t n = std::min(capacity, bytes_.size());
  std::memcpy(out, bytes_.data(), n);
  bytes_.remove_prefix(n);
  return n;
}

Status SplitTraceEvents(ByteSource* source, TraceEventHandler* handler, uint64_t* bytes_read) {
  Splitter splitter(source, handler);
  Status status = splitter.Run();
  if (bytes_read != nullptr) *bytes_read = splitter.bytes_read();
  return status;
}

}  // namespace gpuattr::collector
