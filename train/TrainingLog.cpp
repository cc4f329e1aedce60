// TrainingLog.cpp
#include "train/TrainingLog.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "tensor/Json.h"
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

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

TrainingLog::TrainingLog(const std::string& path, bool append)
    : path_(path),
      json_(path.ends_with(".jsonl") || path.ends_with(".json")),
      start_(std::chrono::steady_clock::now()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw tensor::Error("nn.TrainingLog: cannot open " + path + " for writing: it is a directory, expected a file");
  }
  // the parent too, as save_checkpoint creates its directory: --log runs/fm.csv in a fresh tree
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw tensor::Error("nn.TrainingLog: cannot open " + path + " for writing: cannot create its directory " +
                          parent.string() + ": " + ec.message());
    }
  }
  const auto size = append ? fs::file_size(path, ec) : 0;
  const bool header = !json_ && !(append && !ec && size > 0);
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
  // the kind escaped as its format wants (JSON string, RFC 4180 field), before anything is written
  std::string kind;
  if (json_) {
    try {
      kind = tensor::Json(r.kind).dump();
    } catch (const tensor::Error& e) {
      throw tensor::Error("nn.TrainingLog::write: expected a UTF-8 kind for " + path_ + ", got one that is not (" +
                          e.what() + ")");
    }
  } else {
    kind = csv_field(r.kind);
  }
  const std::string values[] = {kind,
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
      out_ << (i ? ", " : "") << "\"" << kColumns[i] << "\": " << values[i];
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
