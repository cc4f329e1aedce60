// FileIO.h: whole-file reads and crash-safe replacement of files, for safetensors and model
// files. A write goes to a new temporary file beside the target (<path>.tmp.<pid>.<n>,
// created exclusively, so concurrent saves never share one), is checked through the last
// close, fsynced, and only then renamed over the target; the directory is fsynced after the
// rename. Any failure removes the temporary file and leaves the previous target untouched.
// The new file keeps the permission bits of the file it replaces (a new target gets 0666
// less the umask). A temporary file left by a killed writer is removed by the next write
// of the same target (Note [Stale temporary files] in FileIO.cpp). POSIX only (Linux, macOS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tensor {

// The bytes of `path`; `who` ("tensor::load_safetensors") starts every error, which names
// the path and why (missing, a directory, unreadable).
std::vector<uint8_t> read_file(const std::string& path, const char* who);

// A complete, durable copy of `data` in a temporary file beside `path`, waiting for commit().
// The destructor removes the temporary file unless commit() succeeded (it never throws).
class PendingFile {
 public:
  PendingFile(const std::string& path, const void* data, size_t size, const char* who);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  // Renames the temporary file over `path`, then fsyncs the directory.
  void commit();
  // Whether the rename happened (commit() may still throw after it, when the directory
  // cannot be synced).
  bool committed() const { return committed_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void release();

  std::string path_, tmp_, who_;
  int lock_ = -1;  // a descriptor of the temporary file holding its flock
  bool committed_ = false;
};

// PendingFile(path, data, size, who).commit(): `path` holds either its old or its new bytes.
void write_file_atomic(const std::string& path, const void* data, size_t size, const char* who);

}  // namespace tensor
