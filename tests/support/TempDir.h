// TempDir.h: a fresh directory under the system's temporary directory for one test, removed
// with everything in it when the test ends; `dir / "name"` is a path inside it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix)
      : path(std::filesystem::temp_directory_path() / (prefix + "." + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace testing
