// Args.h: the samples' command-line parsing: flags with values (`--epochs 3` or
// `--epochs=3`), checked ranges and choices. Anything wrong prints the problem on one line
// and a hint to --help, then exits with status 2; --help prints the usage and exits 0.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace samples {

class Args {
 public:
  Args(int argc, char** argv, std::string usage) : argc_(argc), argv_(argv), usage_(std::move(usage)) {
    const std::string path = argc > 0 && argv[0] ? argv[0] : "sample";
    program_ = path.substr(path.rfind('/') + 1);
  }

  const std::string& program() const { return program_; }

  // Whether a flag is left. A `--flag=value` whose flag took no value is refused here.
  bool more() {
    refuse_unused_value();
    return next_ < argc_;
  }

  // The next flag's name; `--name=value` gives "--name" and keeps the value for value().
  std::string flag() {
    refuse_unused_value();
    std::string f = argv_[next_++];
    inline_.reset();
    const size_t eq = f.find('=');
    if (f.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_ = f.substr(eq + 1);
      f.resize(eq);
    }
    current_ = f;
    return f;
  }

  std::string value(const std::string& flag) {
    if (inline_) {
      std::string v = std::move(*inline_);
      inline_.reset();
      return v;
    }
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
      fail(flag + " expects a number in [" + shortest(lo) + ", " + shortest(hi) + "], got '" + v + "'");
    }
    return x;
  }

  std::string choice(const std::string& flag, std::initializer_list<const char*> options) {
    return choice(flag, std::span<const char* const>(options.begin(), options.size()));
  }
  std::string choice(const std::string& flag, std::span<const char* const> options) {
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

  // The problem on one line, then where the options are listed (the usage would bury it).
  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\nTry '%s --help' for the options.\n", program_.c_str(), message.c_str(),
                 program_.c_str());
    std::exit(2);
  }

  [[noreturn]] void usage(int status) const {
    std::fputs(usage_.c_str(), status == 0 ? stdout : stderr);
    std::exit(status);
  }

 private:
  void refuse_unused_value() {
    if (inline_) fail(current_ + " takes no value, got '" + current_ + "=" + *inline_ + "'");
  }

  // 1e-08 rather than 0.000000 (std::to_string's fixed six decimals)
  static std::string shortest(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }

  int argc_;
  char** argv_;
  std::string usage_, program_;
  int next_ = 1;
  std::string current_;
  std::optional<std::string> inline_;  // the value of the last --flag=value, until taken
};

// A sample's flags as one table: each flag once, with where its value goes and its check, so a
// sample's parse() lists its options rather than testing every word against each of them.
//   samples::Flags().integer("--epochs", o.epochs, 1, 1000).choice("--backend", o.backend, {"nn", "cudnn"})
//       .parse(args);
// parse() reads the whole command line: --help and -h print the usage and exit 0, a flag not in
// the table fails as "unknown option --x".
class Flags {
 public:
  using Handler = std::function<void(Args& args, const std::string& flag)>;

  // A flag whose value needs more than a range or a choice: `handler` reads and checks it.
  Flags& on(std::string flag, Handler handler) {
    table_.emplace_back(std::move(flag), std::move(handler));
    return *this;
  }
  Flags& text(std::string flag, std::string& out) {
    return on(std::move(flag), [&out](Args& a, const std::string& f) { out = a.value(f); });
  }
  Flags& choice(std::string flag, std::string& out, std::initializer_list<const char*> options) {
    return on(std::move(flag), [&out, list = std::vector<const char*>(options)](Args& a, const std::string& f) {
      out = a.choice(f, list);
    });
  }
  // An integer in [lo, hi], stored in out's type (the range fits it).
  template <class Int>
  Flags& integer(std::string flag, Int& out, int64_t lo, int64_t hi) {
    return on(std::move(flag),
              [&out, lo, hi](Args& a, const std::string& f) { out = static_cast<Int>(a.integer(f, lo, hi)); });
  }
  Flags& number(std::string flag, double& out, double lo, double hi) {
    return on(std::move(flag), [&out, lo, hi](Args& a, const std::string& f) { out = a.number(f, lo, hi); });
  }
  // A switch: present, it sets out; it takes no value.
  Flags& set(std::string flag, bool& out) {
    return on(std::move(flag), [&out](Args&, const std::string&) { out = true; });
  }

  void parse(Args& args) const {
    while (args.more()) {
      const std::string flag = args.flag();
      if (flag == "--help" || flag == "-h") args.usage(0);
      const auto entry = std::find_if(table_.begin(), table_.end(), [&](const auto& e) { return e.first == flag; });
      if (entry == table_.end()) args.fail("unknown option " + flag);
      entry->second(args, flag);
    }
  }

 private:
  std::vector<std::pair<std::string, Handler>> table_;
};

// A sample's main(): parses the command line (parse(argc, argv) exits on a bad one), runs, and
// turns an exception into one line on stderr, "<name>: <what>", and exit status 1.
template <class Parse, class Run>
int run_main(const char* name, int argc, char** argv, Parse parse, Run run) {
  const auto options = parse(argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace samples
