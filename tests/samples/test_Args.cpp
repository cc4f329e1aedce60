// test_Args.cpp: the samples' command-line parser (samples/Args.h, its Flags table): `--flag
// value` and `--flag=value`, checked ranges and choices, a flag with its own handler, and what a mistake prints: one
// line naming it and a hint to --help (not the whole usage), status 2; --help prints the usage, status 0. The exits run
// in a child process, whose output and status are checked.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "samples/Args.h"

namespace {

// argv for Args: "prog" first.
struct Argv {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  explicit Argv(std::vector<std::string> w) : words(std::move(w)) {
    words.insert(words.begin(), "/some/dir/prog");
    for (auto& s : words) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words.size()); }
  char** argv() { return ptrs.data(); }
};

const char* kUsage = "usage: prog [options]\n  --epochs N\n  --lr X\n  --mode M\n  --save PATH\n  --quiet\n";

struct Parsed {
  int64_t epochs = 1;
  double lr = 0.1;
  std::string mode = "a", save = "default";
  bool quiet = false;
};

Parsed parse(samples::Args& args) {
  Parsed p;
  samples::Flags()
      .integer("--epochs", p.epochs, 1, 10)
      .number("--lr", p.lr, 1e-8, 10)
      .choice("--mode", p.mode, {"a", "b"})
      .text("--save", p.save)
      .set("--quiet", p.quiet)
      .on("--twice", [&p](samples::Args& a, const std::string& flag) { p.epochs = 2 * a.integer(flag, 1, 5); })
      .parse(args);
  return p;
}

Parsed parse(std::vector<std::string> words) {
  Argv a(std::move(words));
  samples::Args args(a.argc(), a.argv(), kUsage);
  return parse(args);
}

struct Exit {
  int status = -1;
  std::string out, err;
};

// Runs the parser on `words` in a child process (Args exits on --help and on mistakes).
Exit exit_of(std::vector<std::string> words) {
  int out[2], err[2];
  REQUIRE(::pipe(out) == 0);
  REQUIRE(::pipe(err) == 0);
  // the child's exit() flushes what the parent left in its buffers: empty them first
  std::cout.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    parse(std::move(words));
    std::fflush(stdout);
    ::_exit(99);  // parsed without exiting
  }
  ::close(out[1]);
  ::close(err[1]);
  auto drain = [](int fd) {
    std::string s;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return s;
  };
  Exit e;
  e.out = drain(out[0]);
  e.err = drain(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  e.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return e;
}

const std::string kHint = "Try 'prog --help' for the options.\n";

}  // namespace

TEST_CASE("values come as the next word or after '='") {
  const Parsed a = parse({"--epochs", "3", "--lr", "0.5", "--mode", "b", "--save", "x/y", "--quiet"});
  CHECK(a.epochs == 3);
  CHECK(a.lr == 0.5);
  CHECK(a.mode == "b");
  CHECK(a.save == "x/y");
  CHECK(a.quiet);
  const Parsed b = parse({"--epochs=4", "--lr=2e-3", "--mode=a", "--save=p=q", "--quiet"});
  CHECK(b.epochs == 4);
  CHECK(b.lr == 2e-3);
  CHECK(b.mode == "a");
  CHECK(b.save == "p=q");                                     // split at the first '='
  CHECK(parse({"--save="}).save.empty());                     // an empty value, as `--save ''`
  CHECK(parse({"--save", "--quiet"}).save == "--quiet");      // the next word is the value, whatever it is
  CHECK(parse({"--twice=3"}).epochs == 6);                    // a handler reads its own value
  CHECK(parse({"--epochs=2", "--epochs", "5"}).epochs == 5);  // the last one wins
}

TEST_CASE("a mistake prints one line naming it and a hint to --help, status 2") {
  Exit e = exit_of({"--epochs=x"});
  CHECK(e.status == 2);
  CHECK(e.out.empty());
  CHECK(e.err == "prog: --epochs expects an integer in [1, 10], got 'x'\n" + kHint);
  e = exit_of({"--epochs", "11"});
  CHECK(e.err == "prog: --epochs expects an integer in [1, 10], got '11'\n" + kHint);
  e = exit_of({"--lr=0"});
  CHECK(e.err == "prog: --lr expects a number in [1e-08, 10], got '0'\n" + kHint);
  e = exit_of({"--mode", "c"});
  CHECK(e.err == "prog: --mode expects one of a, b, got 'c'\n" + kHint);
  e = exit_of({"--bogus=1"});
  CHECK(e.status == 2);
  CHECK(e.err == "prog: unknown option --bogus\n" + kHint);
  e = exit_of({"--epochs"});
  CHECK(e.err == "prog: --epochs needs a value\n" + kHint);
  // a flag without a value given one: refused, last or not
  e = exit_of({"--quiet=yes"});
  CHECK(e.status == 2);
  CHECK(e.err == "prog: --quiet takes no value, got '--quiet=yes'\n" + kHint);
  CHECK(exit_of({"--quiet=", "--epochs", "2"}).err == "prog: --quiet takes no value, got '--quiet='\n" + kHint);
  CHECK(exit_of({"--epochs", "2"}).status == 99);  // parsed, no exit
  CHECK(exit_of({"--twice", "6"}).err == "prog: --twice expects an integer in [1, 5], got '6'\n" + kHint);
  e = exit_of({"--epochs", "2", "epochs"});  // a word that is no flag
  CHECK(e.status == 2);
  CHECK(e.err == "prog: unknown option epochs\n" + kHint);
}

TEST_CASE("--help prints the usage on stdout and exits 0") {
  for (const char* help : {"--help", "-h"}) {
    const Exit e = exit_of({"--epochs", "2", help});
    CHECK(e.status == 0);
    CHECK(e.out == kUsage);
    CHECK(e.err.empty());
  }
  CHECK(exit_of({"--help", "--bogus"}).status == 0);  // before the rest is read
}
