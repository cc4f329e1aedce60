// Compare.cpp
#include "testkit/Compare.h"

#include <cmath>
#include <sstream>

#include "tensor/Format.h"

namespace nn::testkit {

using tensor::DType;
using tensor::num_str;
using tensor::Tensor;

namespace {
Tensor as_cpu_double(const Tensor& t) { return t.to(tensor::Device::cpu(), DType::Float64).contiguous(); }

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf
int kind_of(double v) { return std::isnan(v) ? 1 : std::isinf(v) ? (v > 0 ? 2 : 3) : 0; }

bool same_shape(Report& r, const std::string& what, const Tensor& got, const Tensor& want) {
  return r.expect(got.sizes() == want.sizes(),
                  what + ": shape " + tensor::shape_str(got.sizes()) + ", want " + tensor::shape_str(want.sizes()));
}

}  // namespace

Report compare_close(const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  Report r;
  const std::string both = what + " (" + got.description() + " vs " + want.description() + ")";
  if (!same_shape(r, both, got, want)) return r;
  r.expect(!tensor::has_nonfinite(got), both + ": NaN or Inf where the reference has none");
  const double err = tensor::rel_norm_error(got, want);
  r.expect(err <= tol, both + ": relative error " + num_str(err) + " > tolerance " + num_str(tol));
  return r;
}

Report compare_nonfinite(const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  Report r;
  const std::string both = what + " (" + got.description() + " vs " + want.description() + ")";
  if (!same_shape(r, both, got, want)) return r;
  const Tensor a = as_cpu_double(got), b = as_cpu_double(want);
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  int64_t mismatches = 0, nonfinite = 0;
  double diff2 = 0, ref2 = 0;
  std::ostringstream listed;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int ka = kind_of(pa[i]), kb = kind_of(pb[i]);
    if (kb != 0) ++nonfinite;
    if (ka != kb) {
      if (mismatches < 12) listed << " [" << i << "] got " << pa[i] << " want " << pb[i] << ";";
      ++mismatches;
    } else if (ka == 0) {
      diff2 += (pa[i] - pb[i]) * (pa[i] - pb[i]);
      ref2 += pb[i] * pb[i];
    }
  }
  r.expect(mismatches == 0, both + ": " + std::to_string(mismatches) +
                                " element(s) differ in kind (NaN / +Inf / -Inf / finite):" + listed.str());
  const double err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  r.expect(err <= tol, both + ": relative error of the finite values " + num_str(err) + " > tolerance " + num_str(tol) +
                           " (" + std::to_string(nonfinite) + " non-finite in the reference)");
  return r;
}

Report compare_values(const std::string& what, const Tensor& got, const std::vector<double>& want, double tol) {
  Report r;
  const std::vector<double> v = as_cpu_double(got).to_vector<double>();
  const std::string head = what + " (" + got.description() + ")";
  if (!r.expect(v.size() == want.size(),
                head + ": " + std::to_string(v.size()) + " elements, want " + std::to_string(want.size())))
    return r;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool good = std::isnan(want[i])   ? std::isnan(v[i])
                      : std::isinf(want[i]) ? v[i] == want[i]
                                            : std::abs(v[i] - want[i]) <= tol;
    r.expect(good, head + ": element " + std::to_string(i) + ": got " + num_str(v[i]) + ", want " + num_str(want[i]) +
                       " (tolerance " + num_str(tol) + ")");
  }
  return r;
}

}  // namespace nn::testkit
