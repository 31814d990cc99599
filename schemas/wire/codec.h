// Encoding and validated decoding of wire messages (protocol.h). Header-only, no allocation.
//
// MessageWriter fills a caller-owned byte buffer of at most kMaxMessageBytes: the shim's flush
// thread uses one per connection. MessageReader walks a received datagram and never reads past it:
// every length is checked against what was received, and a malformed message yields a
// DecodeError, never undefined behaviour. A datagram is validated once, by Open; Rewind reads it
// again from its first record without validating it again. MakeHello and CheckHello are the one
// place a Hello's fixed fields are written and checked. Both classes are single-threaded objects.
#ifndef GPUATTR_SCHEMAS_WIRE_CODEC_H_
#define GPUATTR_SCHEMAS_WIRE_CODEC_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol.h"

namespace gpuattr::wire {

// Appends records after a MessageHeader. Append* return false (and write nothing) when the record
// would not fit; the caller then sends what it has and starts a new message.
class MessageWriter {
 public:
  MessageWriter(uint8_t* buffer, uint32_t capacity) : buffer_(buffer), capacity_(capacity) {
    Reset();
  }

  void Reset() {
    used_ = sizeof(MessageHeader);
    records_ = 0;
  }

  template <typename Body>
  bool Append(const Body& body, uint16_t flags = 0) {
    return AppendRaw(RecordTypeOf<Body>::kType, flags, &body, sizeof(Body), nullptr, 0);
  }

  // RangeEvent is shared by kRangePush and kRangePop.
  bool AppendRange(RecordType type, const RangeEvent& body) {
    return AppendRaw(type, 0, &body, sizeof(body), nullptr, 0);
  }

  // A String record: the fixed body followed by the bytes, truncated to kMaxStringBytes.
  bool AppendString(uint32_t id, std::string_view text) {
    if (text.size() > kMaxStringBytes) text = text.substr(0, kMaxStringBytes);
    String body{id, static_cast<uint32_t>(text.size())};
    return AppendRaw(RecordType::kString, 0, &body, sizeof(body), text.data(),
                     static_cast<uint32_t>(text.size()));
  }

  // Appends an already encoded record (header included), e.g. one copied out of a thread ring.
  bool AppendEncoded(const uint8_t* record, uint32_t size) {
    if (size > capacity_ - used_) return false;
    std::memcpy(buffer_ + used_, record, size);
    used_ += size;
    ++records_;
    return true;
  }

  // Writes the header and returns the datagram's length.
  uint32_t Finish(uint64_t sequence) {
    MessageHeader header{kMessageMagic,
                         kProtocolVersion,
                         static_cast<uint16_t>(sizeof(MessageHeader)),
                         sequence,
                         used_ - static_cast<uint32_t>(sizeof(MessageHeader)),
                         records_};
    std::memcpy(buffer_, &header, sizeof(header));
    return used_;
  }

  uint32_t record_count() const { return records_; }
  bool empty() const { return records_ == 0; }
  const uint8_t* data() const { return buffer_; }

 private:
  bool AppendRaw(RecordType type, uint16_t flags, const void* body, uint32_t body_bytes,
                 const void* tail, uint32_t tail_bytes) {
    const uint32_t size = PaddedRecordBytes(body_bytes + tail_bytes);
    if (size > capacity_ - used_) return false;
    uint8_t* out = buffer_ + used_;
    RecordHeader header{static_cast<uint16_t>(type), flags, size};
    std::memcpy(out, &header, sizeof(header));
    std::memcpy(out + sizeof(header), body, body_bytes);
    if (tail_bytes > 0) std::memcpy(out + sizeof(header) + body_bytes, tail, tail_bytes);
    const uint32_t written = static_cast<uint32_t>(sizeof(header)) + body_bytes + tail_bytes;
    std::memset(out + written, 0, size - written);
    used_ += size;
    ++records_;
    return true;
  }

  uint8_t* buffer_;
  uint32_t capacity_;
  uint32_t used_ = 0;
  uint32_t records_ = 0;
};

// Encodes one record (header + body) into `out`, which must hold PaddedRecordBytes(sizeof(Body)).
// Used by the shim's hot path to write straight into a thread ring.
template <typename Body>
inline uint32_t EncodeRecord(uint8_t* out, RecordType type, const Body& body) {
  static_assert(std::is_trivially_copyable_v<Body>);
  constexpr uint32_t kSize = PaddedRecordBytes(sizeof(Body));
  RecordHeader header{static_cast<uint16_t>(type), 0, kSize};
  std::memcpy(out, &header, sizeof(header));
  std::memcpy(out + sizeof(header), &body, sizeof(Body));
  if constexpr (kSize > sizeof(RecordHeader) + sizeof(Body)) {
    std::memset(out + sizeof(header) + sizeof(Body), 0, kSize - sizeof(header) - sizeof(Body));
  }
  return kSize;
}

enum class DecodeError : uint8_t {
  kNone = 0,
  kShortHeader,  // fewer bytes than a MessageHeader
  kBadMagic,
  kVersionMismatch,
  kBadHeaderSize,
  kPayloadMismatch,  // payload_bytes differs from what was received
  kBadRecordSize,    // < 8, not a multiple of 8, or past the payload
  kRecordCountMismatch,
  kShortBody,  // a known record smaller than its body
  kBadString,  // a String longer than its record or than kMaxStringBytes
};

constexpr const char* DecodeErrorName(DecodeError error) {
  switch (error) {
    case DecodeError::kNone:
      return "none";
    case DecodeError::kShortHeader:
      return "short_header";
    case DecodeError::kBadMagic:
      return "bad_magic";
    case DecodeError::kVersionMismatch:
      return "version_mismatch";
    case DecodeError::kBadHeaderSize:
      return "bad_header_size";
    case DecodeError::kPayloadMismatch:
      return "payload_mismatch";
    case DecodeError::kBadRecordSize:
      return "bad_record_size";
    case DecodeError::kRecordCountMismatch:
      return "record_count_mismatch";
    case DecodeError::kShortBody:
      return "short_body";
    case DecodeError::kBadString:
      return "bad_string";
  }
  return "unknown";
}

// A record as seen by the reader. `body` points into the received datagram; `body_bytes` is
// what the record really carries (its size minus the header), never less than MinBodyBytes for
// a known type.
struct RecordView {
  RecordType type;
  uint16_t flags;
  const uint8_t* body;
  uint32_t body_bytes;

  // Copies the fixed body out (the datagram need not be aligned for Body).
  template <typename Body>
  Body As() const {
    Body out;
    std::memcpy(&out, body, sizeof(Body));
    return out;
  }

  // For kString: the text after the fixed body. Valid only after the reader accepted it.
  std::string_view StringText() const {
    String header = As<String>();
    return {reinterpret_cast<const char*>(body + sizeof(String)), header.length};
  }
};

// Validates a whole datagram up front (Open), then hands out its records (Next).
class MessageReader {
 public:
  // Checks the header and every record's framing. On error nothing may be read.
  DecodeError Open(const uint8_t* data, uint32_t size) {
    data_ = data;
    size_ = size;
    offset_ = 0;
    if (size < sizeof(MessageHeader)) return Fail(DecodeError::kShortHeader);
    std::memcpy(&header_, data, sizeof(header_));
    if (header_.magic != kMessageMagic) return Fail(DecodeError::kBadMagic);
    if (header_.version != kProtocolVersion) return Fail(DecodeError::kVersionMismatch);
    if (header_.header_bytes < sizeof(MessageHeader) || header_.header_bytes > size) {
      return Fail(DecodeError::kBadHeaderSize);
    }
    if (header_.payload_bytes != size - header_.header_bytes) {
      return Fail(DecodeError::kPayloadMismatch);
    }
    uint32_t count = 0;
    for (uint32_t at = header_.header_bytes; at < size; ++count) {
      RecordHeader record;
      if (size - at < sizeof(RecordHeader)) return Fail(DecodeError::kBadRecordSize);
      std::memcpy(&record, data + at, sizeof(record));
      if (record.size < sizeof(RecordHeader) || record.size % 8 != 0 || record.size > size - at) {
        return Fail(DecodeError::kBadRecordSize);
      }
      const uint32_t body_bytes = record.size - static_cast<uint32_t>(sizeof(RecordHeader));
      const auto type = static_cast<RecordType>(record.type);
      if (body_bytes < MinBodyBytes(type)) return Fail(DecodeError::kShortBody);
      if (type == RecordType::kString) {
        String string;
        std::memcpy(&string, data + at + sizeof(RecordHeader), sizeof(string));
        if (string.length > kMaxStringBytes || string.length > body_bytes - sizeof(String)) {
          return Fail(DecodeError::kBadString);
        }
      }
      at += record.size;
    }
    if (count != header_.record_count) return Fail(DecodeError::kRecordCountMismatch);
    offset_ = header_.header_bytes;
    return DecodeError::kNone;
  }

  // The next record, or false at the end. Only after Open returned kNone.
  bool Next(RecordView* out) {
    if (offset_ == 0 || offset_ >= size_) return false;
    RecordHeader record;
    std::memcpy(&record, data_ + offset_, sizeof(record));
    out->type = static_cast<RecordType>(record.type);
    out->flags = record.flags;
    out->body = data_ + offset_ + sizeof(RecordHeader);
    out->body_bytes = record.size - static_cast<uint32_t>(sizeof(RecordHeader));
    offset_ += record.size;
    return true;
  }

  // Back to the first record of the datagram Open accepted (nothing to read after a failed
  // Open): a second pass over a validated datagram needs no second validation.
  void Rewind() {
    if (offset_ != 0) offset_ = header_.header_bytes;
  }

  const MessageHeader& header() const { return header_; }

 private:
  DecodeError Fail(DecodeError error) {
    offset_ = 0;
    return error;
  }

  const uint8_t* data_ = nullptr;
  uint32_t size_ = 0;
  uint32_t offset_ = 0;
  MessageHeader header_{};
};

// A Hello of `mode` for `pid`, with the magic and this protocol's version; rank and local rank
// unset (-1), every other field 0 for the sender to fill.
inline Hello MakeHello(HelloMode mode, uint32_t pid) {
  Hello hello{};
  std::memcpy(hello.magic, kHelloMagic, sizeof(hello.magic));
  hello.protocol_version = kProtocolVersion;
  hello.pid = pid;
  hello.rank = -1;
  hello.local_rank = -1;
  hello.mode = static_cast<uint32_t>(mode);
  return hello;
}

enum class HelloError : uint8_t {
  kNone = 0,
  kBadMagic,
  kVersionMismatch,  // protocol_version is not kProtocolVersion
  kUnknownMode,      // mode is no HelloMode
};

// A Hello's own checks, in this order. Which modes a receiver accepts where is its own rule.
inline HelloError CheckHello(const Hello& hello) {
  if (std::memcmp(hello.magic, kHelloMagic, sizeof(hello.magic)) != 0) {
    return HelloError::kBadMagic;
  }
  if (hello.protocol_version != kProtocolVersion) return HelloError::kVersionMismatch;
  switch (static_cast<HelloMode>(hello.mode)) {
    case HelloMode::kTraced:
    case HelloMode::kArmed:
    case HelloMode::kWindow:
      return HelloError::kNone;
  }
  return HelloError::kUnknownMode;
}

}  // namespace gpuattr::wire

#endif  // GPUATTR_SCHEMAS_WIRE_CODEC_H_
