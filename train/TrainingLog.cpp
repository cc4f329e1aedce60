// TrainingLog.cpp
#include "train/TrainingLog.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "tensor/Tensor.h"

namespace nn {

namespace {
constexpr const char* kColumns[] = {"kind", "epoch",      "step",         "loss",     "accuracy",
                                    "lr",   "loss_scale", "images_per_s", "elapsed_s"};

std::string number(const std::optional<double>& v, bool json) {
  if (!v || !std::isfinite(*v)) return json ? "null" : "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", *v);
  return buf;
}
}  // namespace

TrainingLog::TrainingLog(const std::string& path, bool append)
    : path_(path),
      json_(path.ends_with(".jsonl") || path.ends_with(".json")),
      start_(std::chrono::steady_clock::now()) {
  const bool header = !json_ && !(append && std::filesystem::exists(path) && std::filesystem::file_size(path) > 0);
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  if (!out_) throw tensor::Error("nn.TrainingLog: cannot open " + path + " for writing");
  if (header) {
    for (size_t i = 0; i < std::size(kColumns); ++i) out_ << (i ? "," : "") << kColumns[i];
    out_ << "\n" << std::flush;
  }
}

double TrainingLog::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void TrainingLog::write(const LogRecord& r) {
  const std::string values[] = {r.kind,
                                std::to_string(r.epoch),
                                std::to_string(r.step),
                                number(r.loss, json_),
                                number(r.accuracy, json_),
                                number(r.lr, json_),
                                number(r.lossScale, json_),
                                number(r.imagesPerSecond, json_),
                                number(elapsed(), json_)};
  if (json_) {
    out_ << "{";
    for (size_t i = 0; i < std::size(kColumns); ++i) {
      out_ << (i ? ", " : "") << "\"" << kColumns[i] << "\": " << (i == 0 ? "\"" + values[i] + "\"" : values[i]);
    }
    out_ << "}\n";
  } else {
    for (size_t i = 0; i < std::size(kColumns); ++i) out_ << (i ? "," : "") << values[i];
    out_ << "\n";
  }
  out_.flush();
  if (!out_) throw tensor::Error("nn.TrainingLog::write: cannot write to " + path_);
}

void TrainingLog::maybeWriteStep(const LogRecord& r, int64_t everySteps) {
  if (everySteps > 0 && r.step % everySteps == 0) write(r);
}

}  // namespace nn
