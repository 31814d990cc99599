// Status and StatusOr<T>: how collector code reports failure without exceptions.
//
// Every function that can fail on its input or its environment returns a Status or a StatusOr<T>;
// exceptions never cross a function boundary (third-party calls that can throw are wrapped at the
// call). A non-ok Status always carries a code and a non-empty message that names what failed,
// written for the person running gpuattr. Codes, after abseil:
//   kInvalidArgument     the caller's input is wrong (a flag, a scenario, a rule file);
//   kNotFound            a named thing does not exist (a file, a pid, a metric path);
//   kDataLoss            bytes from the wire or a file are malformed or truncated;
//   kUnavailable         a resource is not there now (a socket, a device) and may be later;
//   kFailedPrecondition  the system is not in the state the operation needs;
//   kPermissionDenied    the peer or the file belongs to someone else;
//   kInternal            a bug of ours: an invariant broke.
// main() maps codes to exit statuses (collector/cli): 2 usage, 3 input/data, 4 internal.
#ifndef GPUATTR_COLLECTOR_BASE_STATUS_H_
#define GPUATTR_COLLECTOR_BASE_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace gpuattr {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kDataLoss,
  kUnavailable,
  kFailedPrecondition,
  kPermissionDenied,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a T or a non-ok Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an ok Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace gpuattr

#define GPUATTR_STATUS_CONCAT_INNER(a, b) a##b
#define GPUATTR_STATUS_CONCAT(a, b) GPUATTR_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not ok.
#define GPUATTR_RETURN_IF_ERROR(expr)                                  \
  do {                                                                 \
    ::gpuattr::Status gpuattr_status_internal = (expr);                \
    if (!gpuattr_status_internal.ok()) return gpuattr_status_internal; \
  } while (0)

// `lhs = value of expr` when `expr` (a StatusOr) is ok, else returns its Status.
#define GPUATTR_ASSIGN_OR_RETURN(lhs, expr)                             \
  auto GPUATTR_STATUS_CONCAT(gpuattr_statusor_, __LINE__) = (expr);     \
  if (!GPUATTR_STATUS_CONCAT(gpuattr_statusor_, __LINE__).ok())         \
    return GPUATTR_STATUS_CONCAT(gpuattr_statusor_, __LINE__).status(); \
  lhs = std::move(GPUATTR_STATUS_CONCAT(gpuattr_statusor_, __LINE__)).value()

#endif  // GPUATTR_COLLECTOR_BASE_STATUS_H_
