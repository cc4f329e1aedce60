// TrainingLog.h: a small log any training loop writes a line to per epoch (or every N steps):
// CSV (a header line, then one row per record) or JSON lines, by the file's extension
// (.jsonl / .json: JSON lines; anything else: CSV). Columns: epoch, step, loss, accuracy,
// lr, loss_scale, images_per_s, elapsed_s, and `kind` ("epoch" or "step"); a field not
// measured (accuracy of a step record) is empty in CSV and null in JSON. `kind` is any text:
// a JSON string with JSON's escapes (it must be UTF-8), a CSV field quoted as RFC 4180 says
// when it holds a comma, a quote or a line break. Each record is flushed as it is written, so
// a crashed run keeps its log; scripts/plot_log.py draws it (it needs matplotlib).
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace nn {

struct LogRecord {
  std::string kind = "epoch";  // "epoch" or "step"
  int64_t epoch = 0, step = 0;
  std::optional<double> loss{}, accuracy{}, lr{}, lossScale{}, imagesPerSecond{};
};

class TrainingLog {
 public:
  // Truncates `path` (append = false) or appends to it (a resumed run: no second header);
  // creates its parent directory if needed. A path that cannot be opened (a directory, a
  // parent that cannot be created) is a tensor::Error naming it.
  explicit TrainingLog(const std::string& path, bool append = false);
  // Writes the record with the seconds since construction.
  void write(const LogRecord& r);
  // Every N-th step: write(r) when step % everySteps == 0 (everySteps <= 0: never).
  void maybeWriteStep(const LogRecord& r, int64_t everySteps);
  double elapsed() const;
  bool json() const { return json_; }

 private:
  std::ofstream out_;
  std::string path_;
  bool json_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nn
