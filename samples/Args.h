// Args.h: the samples' command-line parsing: flags with values, checked ranges and choices;
// anything wrong prints the problem and the usage text and exits with status 2.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace samples {

class Args {
 public:
  Args(int argc, char** argv, const char* usage) : argc_(argc), argv_(argv), usage_(usage) {}

  bool more() const { return next_ < argc_; }
  std::string flag() { return argv_[next_++]; }

  std::string value(const std::string& flag) {
    if (next_ >= argc_) fail(flag + " needs a value");
    return argv_[next_++];
  }

  int64_t integer(const std::string& flag, int64_t lo, int64_t hi) {
    const std::string v = value(flag);
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || n < lo || n > hi) {
      fail(flag + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
    }
    return n;
  }

  double number(const std::string& flag, double lo, double hi) {
    const std::string v = value(flag);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x >= lo && x <= hi)) {
      fail(flag + " expects a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
    }
    return x;
  }

  std::string choice(const std::string& flag, std::initializer_list<const char*> options) {
    const std::string v = value(flag);
    std::string list;
    for (const char* o : options) {
      if (v == o) return v;
      list += std::string(list.empty() ? "" : ", ") + o;
    }
    fail(flag + " expects one of " + list + ", got '" + v + "'");
  }

  // Fails now, before any work, unless a file can be created beside `path` (the directory
  // exists and takes new files): a long run must not end in "cannot write". Probes with a
  // file of its own, so `path` itself is not touched.
  void writable(const std::string& flag, const std::string& path) const {
    const std::string probe = path + ".probe." + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) fail(flag + ": cannot write '" + path + "': " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
  }

  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n%s", argv_[0], message.c_str(), usage_);
    std::exit(2);
  }

  [[noreturn]] void usage(int status) const {
    std::fputs(usage_, status == 0 ? stdout : stderr);
    std::exit(status);
  }

 private:
  int argc_;
  char** argv_;
  const char* usage_;
  int next_ = 1;
};

}  // namespace samples
