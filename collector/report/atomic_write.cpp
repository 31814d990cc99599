// WriteTextAtomically and AtomicTextFile (atomic_write.h): temp file in the target's directory,
// fsync, rename.
#include "report/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace gpuattr::collector {

namespace {

// An output that cannot be written: one exit status for all of them (4), whatever the errno.
Status Errno(const std::string& what) {
  const int error = errno;
  const std::string message = what + ": " + std::strerror(error);
  if (error == EACCES || error == EPERM || error == EROFS) return PermissionDeniedError(message);
  return UnavailableError(message);
}

Status WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write " + path);
    }
    written += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AppearedMeanwhile(const std::string& path) {
  return FailedPreconditionError(path +
                                 " appeared while gpuattr was writing it and is left as it was; "
                                 "nothing was written (give each writer its own name: %p, %h, "
                                 "%q{RANK} or %n)");
}

// Publishes `temp` as `path` unless a file of that name exists; `temp` is gone afterwards.
Status PublishWithoutReplacing(const std::string& temp, const std::string& path) {
  if (::link(temp.c_str(), path.c_str()) == 0) {
    ::unlink(temp.c_str());
    return Status::Ok();
  }
  const int error = errno;
  if (error == EEXIST) {
    ::unlink(temp.c_str());
    return AppearedMeanwhile(path);
  }
  if (error != EPERM && error != ENOTSUP && error != EOPNOTSUPP) {
    errno = error;
    Status status = Errno("cannot link " + temp + " to " + path);
    ::unlink(temp.c_str());
    return status;
  }
  // No hard links on this file system: check, then rename (a file created between the two is
  // replaced; the name was checked before the work started as well).
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    ::unlink(temp.c_str());
    return AppearedMeanwhile(path);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status status = Errno("cannot rename " + temp + " to " + path);
    ::unlink(temp.c_str());
    return status;
  }
  return Status::Ok();
}

}  // namespace

bool IsWrittenInPlace(mode_t mode) { return S_ISCHR(mode) || S_ISFIFO(mode); }

StatusOr<AtomicTextFile> AtomicTextFile::Create(const std::string& path, ExistingFile existing) {
  if (path.empty()) return InvalidArgumentError("the output path is empty");
  if (struct stat info{}; ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (!IsWrittenInPlace(info.st_mode)) {
      return FailedPreconditionError(path + " is not a regular file, a character device or a FIFO");
    }
    // /dev/null, a terminal, a pipe: renaming onto it would replace the node itself. A FIFO
    // that nobody reads would hold open(2) until a reader comes, for ever if none does: opened
    // without blocking, that is ENXIO at once, refused. The writes then block as a pipe's do.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENXIO && S_ISFIFO(info.st_mode)) {
      return FailedPreconditionError(
          path +
          " is a FIFO that no process reads, and gpuattr does not wait for a reader: "
          "start the reader first (for example `cat " +
          path + " > report.json &`), or write to a file");
    }
    if (fd < 0) return Errno("cannot open " + path);
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      Status status = Errno("cannot make the writes to " + path + " blocking");
      ::close(fd);
      return status;
    }
    AtomicTextFile file;
    file.fd_ = fd;
    file.path_ = path;
    file.existing_ = existing;
    return file;
  }
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temp_name = (dir == "/" ? "" : dir) + "/." + base + ".tmpXXXXXX";
  std::vector<char> temp(temp_name.begin(), temp_name.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return Errno("cannot create a temporary file next to " + path);
  AtomicTextFile file;
  file.fd_ = fd;
  file.path_ = path;
  file.temp_path_ = temp.data();
  file.existing_ = existing;
  return file;
}

AtomicTextFile::AtomicTextFile(AtomicTextFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      existing_(other.existing_),
      status_(std::move(other.status_)) {}

AtomicTextFile::~AtomicTextFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicTextFile::Append(const std::string& text) {
  if (fd_ >= 0 && status_.ok()) status_ = WriteAll(fd_, text, temp_path_);
}

Status AtomicTextFile::Commit() {
  if (fd_ < 0) return FailedPreconditionError("the file was committed already");
  Status status = status_;
  const int fd = std::exchange(fd_, -1);
  if (temp_path_.empty()) {  // written in place (a device, a FIFO): nothing to publish
    if (::close(fd) != 0 && status.ok()) status = Errno("cannot close " + path_);
    return status;
  }
  // mkstemp creates 0600; a report is an ordinary 0644 file. (Reading the umask means setting
  // it, which races with other threads creating files, so it is not consulted.)
  if (status.ok() && ::fchmod(fd, 0644) != 0)
    status = Errno("cannot set the mode of " + temp_path_);
  if (status.ok() && ::fsync(fd) != 0) status = Errno("cannot fsync " + temp_path_);
  if (::close(fd) != 0 && status.ok()) status = Errno("cannot close " + temp_path_);
  if (!status.ok()) {
    ::unlink(temp_path_.c_str());
    return status;
  }
  if (existing_ == ExistingFile::kRefuse) return PublishWithoutReplacing(temp_path_, path_);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    status = Errno("cannot rename " + temp_path_ + " to " + path_);
    ::unlink(temp_path_.c_str());
  }
  return status;
}

Status WriteTextAtomically(const std::string& text, const std::string& path,
                           ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile file, AtomicTextFile::Create(path, existing));
  file.Append(text);
  return file.Commit();
}

}  // namespace gpuattr::collector
