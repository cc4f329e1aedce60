// Print.cpp: Torch-style printing: values in columns, 2-d slices of higher-rank tensors
// headed "(i,j,.,.) = ", then "[tensor.FloatTensor of size 2x3]". Large tensors print
// their first elements only.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "tensor/Tensor.h"

namespace tensor {

namespace {

constexpr int64_t kMaxPrinted = 1000;

std::string type_label(const Tensor& t) {
  std::string base;
  switch (t.dtype()) {
    case DType::Float32: base = "Float"; break;
    case DType::Float64: base = "Double"; break;
    case DType::Float16: base = "Half"; break;
    case DType::BFloat16: base = "BFloat16"; break;
    case DType::Int64: base = "Long"; break;
    case DType::UInt8: base = "Byte"; break;
  }
  return std::string("tensor.") + (t.is_cuda() ? "Cuda" : "") + base + "Tensor";
}

struct Format {
  bool integral = true;
  bool scientific = false;
  int width = 1;

  std::string operator()(double v) const {
    char buf[64];
    if (std::isnan(v) || std::isinf(v)) {
      std::snprintf(buf, sizeof buf, "%*s", width, std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    } else if (integral) {
      std::snprintf(buf, sizeof buf, "%*.0f", width, v);
    } else if (scientific) {
      std::snprintf(buf, sizeof buf, "%*.4e", width, v);
    } else {
      std::snprintf(buf, sizeof buf, "%*.4f", width, v);
    }
    return buf;
  }
};

Format choose_format(const std::vector<double>& values) {
  Format f;
  double max_abs = 0, min_abs = INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) f.integral = false;
    max_abs = std::max(max_abs, std::abs(v));
    if (v != 0) min_abs = std::min(min_abs, std::abs(v));
  }
  if (!f.integral) f.scientific = max_abs >= 1e5 || min_abs < 1e-4;
  if (f.integral && max_abs >= 1e9) {
    f.integral = false;
    f.scientific = true;
  }
  f.width = 0;
  for (double v : values) f.width = std::max<int>(f.width, static_cast<int>(f(v).size()));
  return f;
}

void print_matrix(std::ostream& os, const double* v, int64_t rows, int64_t cols, const Format& f) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) os << (c ? "  " : " ") << f(v[r * cols + c]);
    os << '\n';
  }
}

}  // namespace

std::string Tensor::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[undefined tensor]";
  // built with a stream: GCC 12 misreports "literal" + std::string under -O3 (-Wrestrict)
  std::ostringstream footer_os;
  footer_os << '[' << type_label(t) << " of size ";
  for (int64_t i = 0; i < t.dim(); ++i) footer_os << (i ? "x" : "") << t.size(i);
  if (t.dim() == 0) footer_os << "[]";
  if (t.is_cuda()) footer_os << " (" << t.device().str() << ')';
  footer_os << ']';
  const std::string footer = footer_os.str();
  if (t.numel() == 0) return os << '[' << type_label(t) << " with no dimension]\n";
  if (t.numel() > kMaxPrinted) {
    return os << "... (" << t.numel() << " elements, not printed)\n" << footer << '\n';
  }
  const std::vector<double> v = t.to_vector<double>();
  const Format f = choose_format(v);
  if (t.dim() == 0) return os << f(v[0]) << '\n' << footer << '\n';
  if (t.dim() == 1) {
    print_matrix(os, v.data(), t.size(0), 1, f);
  } else {
    const int64_t rows = t.size(-2), cols = t.size(-1);
    const int64_t slices = t.numel() / (rows * cols);
    for (int64_t s = 0; s < slices; ++s) {
      if (t.dim() > 2) {
        os << '(';
        int64_t rem = s;
        std::vector<int64_t> idx(static_cast<size_t>(t.dim() - 2));
        for (int64_t d = t.dim() - 3; d >= 0; --d) {
          idx[d] = rem % t.size(d);
          rem /= t.size(d);
        }
        for (size_t d = 0; d < idx.size(); ++d) os << idx[d] + 1 << ',';
        os << ".,.) = \n";
      }
      print_matrix(os, v.data() + s * rows * cols, rows, cols, f);
      if (t.dim() > 2) os << '\n';
    }
  }
  return os << footer << '\n';
}

}  // namespace tensor
