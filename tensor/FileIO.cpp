// FileIO.cpp: POSIX file descriptors, so every step of a write (each write(), fsync, close,
// rename) has its own checked status; iostreams report a failed final flush only through
// a state nobody looks at once the stream is destroyed.
#include "tensor/FileIO.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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

// Note [Stale temporary files]
// A writer killed between creating its <name>.tmp.<pid>.<n> and the rename leaves it behind,
// and nothing else would ever remove it. Each new PendingFile for <name> therefore removes
// the temporary files of <name> whose writer is gone: the pid in the name is not a live
// process (kill(pid, 0) says ESRCH), and nobody holds the flock every writer keeps on its
// temporary file until commit or removal (where the filesystem has flock). The pid alone
// would do on one machine; the lock keeps a writer in another pid namespace, or on another
// host sharing the directory over NFS, from losing its file. Files of this process are
// never touched (another thread's save may be under way), and any doubt (an unreadable file,
// an odd name) keeps the file.
bool digits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

void remove_stale_temps(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = parent_dir(path);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // creating the new temporary file will say what is wrong
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dot = name.find('.', prefix.size());  // <pid>.<n>
    if (dot == std::string::npos || !digits(name, prefix.size(), dot) || !digits(name, dot + 1, name.size()) ||
        dot - prefix.size() > 9) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(prefix.size(), dot - prefix.size())));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string& file : stale) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st {};
    // EWOULDBLOCK: a writer holds it; ENOLCK, EOPNOTSUPP: the filesystem has no flock
    const bool unlocked = ::flock(fd, LOCK_EX | LOCK_NB) == 0 || errno == ENOLCK || errno == EOPNOTSUPP;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && unlocked) ::unlink(file.c_str());
    ::close(fd);
  }
}

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
  remove_stale_temps(path);
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
    release();  // the destructor does not run for a constructor that throws
    throw Error(detail::concat(who, ": ", step, " '", path, "' failed (temporary file removed, '", path,
                               "' left as it was): ", reason(err)));
  };
  // Held (through a second descriptor, as the first is closed and checked below) until the
  // file is renamed or removed: Note [Stale temporary files]. Best effort: a filesystem
  // without flock still saves, its stale files judged by the pid alone.
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) lock_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  // A replaced file keeps its permission bits (a private 0600 file stays private; no
  // set-id bits); a new one gets 0666 less the umask, as open() made it.
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode) && ::fchmod(fd, old.st_mode & 0777) != 0) {
    fail("keeping the permissions of", errno);
  }
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
    release();
    throw Error(detail::concat(who, ": closing '", path, "' failed (temporary file removed): ", reason(err)));
  }
}

PendingFile::~PendingFile() {
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  release();
}

void PendingFile::release() {
  if (lock_ >= 0) ::close(lock_);
  lock_ = -1;
}

void PendingFile::commit() {
  if (committed_) return;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw Error(detail::concat(who_, ": cannot rename '", tmp_, "' to '", path_, "': ", reason(errno)));
  }
  committed_ = true;
  release();
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
