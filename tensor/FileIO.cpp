// FileIO.cpp: POSIX file descriptors, so every step of a write (each write(), fsync, close,
// rename) has its own checked status; iostreams report a failed final flush only through
// a state nobody looks at once the stream is destroyed.
#include "tensor/FileIO.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>

#include "tensor/DType.h"

namespace tensor {

namespace {

std::string reason(int err) { return std::generic_category().message(err); }

// The directory holding `path`: "." for a bare name.
std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

std::vector<uint8_t> read_file(const std::string& path, const char* who) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw Error(detail::concat(who, ": cannot open '", path, "': ", reason(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(detail::concat(who, ": cannot stat '", path, "': ", reason(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(detail::concat(who, ": '", path, "' is a directory, expected a file"));
  // Regular files: their size plus one byte, so that one more read() sees the end; anything
  // else (a pipe) grows as it comes.
  std::vector<uint8_t> bytes(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{1} << 16);
  size_t used = 0;
  for (;;) {
    if (used == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(detail::concat(who, ": reading '", path, "' failed: ", reason(errno)));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  return bytes;
}

PendingFile::PendingFile(const std::string& path, const void* data, size_t size, const char* who)
    : path_(path), who_(who) {
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp_ = detail::concat(path, ".tmp.", ::getpid(), ".", temp_counter.fetch_add(1));
    fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EINTR && (errno != EEXIST || attempt > 100)) {
      const int err = errno;
      tmp_.clear();  // nothing of ours to remove
      throw Error(detail::concat(who, ": cannot create a temporary file beside '", path, "': ", reason(err)));
    }
  }
  auto fail = [&](const char* step, int err) {
    ::close(fd);
    ::unlink(tmp_.c_str());
    tmp_.clear();
    throw Error(detail::concat(who, ": ", step, " '", path, "' failed (temporary file removed, '", path,
                               "' left as it was): ", reason(err)));
  };
  const auto* p = static_cast<const uint8_t*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("flushing", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    tmp_.clear();
    throw Error(detail::concat(who, ": closing '", path, "' failed (temporary file removed): ", reason(err)));
  }
}

PendingFile::~PendingFile() {
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void PendingFile::commit() {
  if (committed_) return;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw Error(detail::concat(who_, ": cannot rename '", tmp_, "' to '", path_, "': ", reason(errno)));
  }
  committed_ = true;
  // The rename is durable once the directory is; filesystems that cannot fsync a directory
  // say EINVAL, and there is nothing more to do.
  const std::string dir = parent_dir(path_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) {
    throw Error(detail::concat(who_, ": '", path_, "' was written, but syncing its directory '", dir,
                               "' failed: ", reason(err)));
  }
}

void write_file_atomic(const std::string& path, const void* data, size_t size, const char* who) {
  PendingFile(path, data, size, who).commit();
}

}  // namespace tensor
