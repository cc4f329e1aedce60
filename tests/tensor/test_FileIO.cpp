// test_FileIO.cpp: saving under injected faults. A save that fails must say so, leave the
// previous file as it was (loadable) and leave no temporary file behind: a file-size limit
// hit mid-write (RLIMIT_FSIZE, in a child process), a directory that cannot take files, a
// parent path that is a regular file, and a writer killed at a random point.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "tensor/FileIO.h"
#include "tensor/Safetensors.h"

using namespace tensor;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cudnn-nn-fileio-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  // files in the directory other than `keep`
  std::vector<std::string> others(const std::set<std::string>& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) {
      if (!keep.count(e.path().filename().string())) out.push_back(e.path().filename().string());
    }
    return out;
  }
};

std::map<std::string, Tensor> weights(int64_t n, double value) { return {{"w", full({n}, value)}}; }

// Runs `f` in a child process; returns its exit status (or 128 + the signal).
template <class F>
int in_child(F&& f) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 1;
    try {
      code = f();
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The pid of a process that has exited and been reaped (not alive).
pid_t in_child_pid() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

TEST_CASE("a file-size limit hit while saving: the error is reported, the old file stays, no temp is left") {
  TempDir dir;
  const std::string file = dir / "w.safetensors";
  save_safetensors(file, weights(16, 1.0));
  const auto before = read_file(file, "test");
  // the child may write 1000 bytes per file: the 40 KB save fails part way (EFBIG), which
  // the writer used to notice only for write(), not for the final flush and close
  const int code = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);  // else the kernel kills the writer instead of failing write()
    rlimit limit{1000, 1000};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
    try {
      save_safetensors(file, weights(10000, 2.0));
    } catch (const Error& e) {
      const std::string what = e.what();
      return what.find("left as it was") != std::string::npos ? 0 : 4;
    }
    return 5;  // reported success over a truncated file
  });
  CHECK(code == 0);
  CHECK(read_file(file, "test") == before);
  CHECK(load_safetensors(file).tensors.at("w").to_vector<float>() == std::vector<float>(16, 1.0f));
  CHECK(dir.others({"w.safetensors"}).empty());
}

TEST_CASE("a directory that takes no new files, or a parent that is a file: clear errors, nothing changed") {
  TempDir dir;
  const std::string file = dir / "w.safetensors";
  save_safetensors(file, weights(4, 1.0));
  // a path whose parent is a regular file works as a fault for every user, root included
  CHECK_THROWS_WITH_AS(save_safetensors(file + "/x.safetensors", weights(4, 2.0)),
                       doctest::Contains("tensor::save_safetensors: cannot create a temporary file beside"), Error);
  CHECK_THROWS_WITH_AS(write_file_atomic(dir / "missing/x.json", "{}", 2, "test"),
                       doctest::Contains("No such file or directory"), Error);
  // a read-only directory stops writes only for users without CAP_DAC_OVERRIDE (not root)
  if (::geteuid() != 0) {
    fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH_AS(save_safetensors(file, weights(4, 2.0)), doctest::Contains("Permission denied"), Error);
    fs::permissions(dir.path, fs::perms::owner_all);
  } else {
    MESSAGE("running as root: directory permissions do not stop writes; covered by the regular-file parent");
  }
  CHECK(load_safetensors(file).tensors.at("w").to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(dir.others({"w.safetensors"}).empty());
}

TEST_CASE("temporary files are unique per save and removed when not committed") {
  TempDir dir;
  const std::string file = dir / "x.bin";
  {
    PendingFile a(file, "aaaa", 4, "test"), b(file, "bb", 2, "test");
    CHECK(a.temp_path() != b.temp_path());
    CHECK(fs::exists(a.temp_path()));
    CHECK(fs::path(a.temp_path()).parent_path() == dir.path);  // same directory: rename is atomic
    b.commit();
  }  // a is dropped uncommitted
  CHECK(read_file(file, "test") == std::vector<uint8_t>{'b', 'b'});
  CHECK(dir.others({"x.bin"}).empty());
  write_file_atomic(file, "", 0, "test");  // an empty file is a file too
  CHECK(read_file(file, "test").empty());
  CHECK_THROWS_WITH_AS(read_file(dir.path.string(), "test"), doctest::Contains("is a directory, expected a file"),
                       Error);
}

TEST_CASE("a writer killed at any point leaves a complete file, old or new") {
  TempDir dir;
  const std::string file = dir / "w.safetensors";
  save_safetensors(file, weights(1 << 16, 0.0));
  for (int round = 0; round < 4; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 1;; ++i) save_safetensors(file, weights(1 << 16, i));  // 256 KB each
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 15 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    const Tensor w = load_safetensors(file).tensors.at("w");  // never a torn file
    const auto v = w.to_vector<float>();
    REQUIRE(v.size() == size_t{1} << 16);
    CHECK(v.front() == v.back());
  }
  // a killed process cannot remove its temporary file; the names say whose it was
  const auto left = dir.others({"w.safetensors"});
  for (const auto& name : left) CHECK(name.find("w.safetensors.tmp.") == 0);
  // the next save of the file removes them: their writer is dead and holds no lock
  save_safetensors(file, weights(4, 1.0));
  CHECK(dir.others({"w.safetensors"}).empty());
}

TEST_CASE("stale temporary files: only a dead writer's, of the same target, are removed") {
  TempDir dir;
  const std::string file = dir / "w.bin";
  const pid_t dead = in_child_pid();
  auto temp = [&](const std::string& target, pid_t pid, int n) {
    return target + ".tmp." + std::to_string(pid) + "." + std::to_string(n);
  };
  const std::string stale = temp(file, dead, 3), mine = temp(file, ::getpid(), 999),
                    parent = temp(file, ::getppid(), 0), other = temp(dir / "v.bin", dead, 0),
                    odd = file + ".tmp." + std::to_string(dead) + ".x";
  for (const auto& f : {stale, mine, parent, other, odd}) std::ofstream(f) << "partial";
  // a writer alive in another pid namespace or host: its pid means nothing here, its lock does
  const std::string locked = temp(file, dead, 4);
  std::ofstream(locked) << "partial";
  const int fd = ::open(locked.c_str(), O_RDONLY);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  write_file_atomic(file, "new", 3, "test");
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(mine));    // this process's: another thread may be saving
  CHECK(fs::exists(parent));  // a live process's
  CHECK(fs::exists(other));   // another target's
  CHECK(fs::exists(odd));     // not a name a writer makes
  CHECK(fs::exists(locked));
  ::close(fd);
  write_file_atomic(file, "new", 3, "test");
  CHECK_FALSE(fs::exists(locked));
}

TEST_CASE("a replaced file keeps its permissions; a new file follows the umask") {
  TempDir dir;
  const std::string file = dir / "private.bin", fresh = dir / "fresh.bin";
  const auto rw = fs::perms::owner_read | fs::perms::owner_write;
  const mode_t before = ::umask(022);
  write_file_atomic(file, "a", 1, "test");
  CHECK((fs::status(file).permissions() & fs::perms::all) == (rw | fs::perms::group_read | fs::perms::others_read));
  fs::permissions(file, rw);
  write_file_atomic(file, "b", 1, "test");
  CHECK((fs::status(file).permissions() & fs::perms::all) == rw);
  fs::permissions(file, rw | fs::perms::group_read | fs::perms::group_write);
  write_file_atomic(file, "c", 1, "test");  // wider than the umask allows: kept too
  CHECK((fs::status(file).permissions() & fs::perms::all) == (rw | fs::perms::group_read | fs::perms::group_write));
  ::umask(077);
  write_file_atomic(fresh, "d", 1, "test");
  ::umask(before);
  CHECK((fs::status(fresh).permissions() & fs::perms::all) == rw);
  CHECK(read_file(file, "test") == std::vector<uint8_t>{'c'});
}
