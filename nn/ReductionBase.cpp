// ReductionBase.cpp: checks and buffers around kernels::reduce_* (nn/kernels/Reduce.h).
#include "nn/ReductionBase.h"

#include "nn/Buffers.h"
#include "nn/kernels/Reduce.h"

namespace nn {

ReductionBase::Layout ReductionBase::checkInput(const Tensor& input, const char* method, bool dtypes) const {
  if (dtypes) check_float(where(method), input);
  const int64_t rank = input.dim();
  const int64_t d = dimension < 0 ? dimension + rank : dimension;
  if (d < 0 || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(dimension) + ", got " +
                input.description());
  }
  Layout l{d, 1, input.size(d), 1, {}};
  for (int64_t k = 0; k < rank; ++k) {
    if (k < d) l.outer *= input.size(k);
    if (k > d) l.inner *= input.size(k);
    if (k != d) l.outShape.push_back(input.size(k));
  }
  if (l.n == 0 && (kind() == Kind::Max || kind() == Kind::Min)) {
    throw Error(where(method) + "expected a non-empty dimension " + std::to_string(dimension) + " to take the " +
                (kind() == Kind::Max ? "maximum" : "minimum") + " over, got " + input.description());
  }
  return l;
}

void ReductionBase::checkGradOutput(const Layout& l, const Tensor& input, const Tensor& gradOutput,
                                    const char* method) const {
  if (gradOutput.sizes() != l.outShape || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of " + tensor::shape_str(l.outShape) + " and the input's dtype (" +
                input.description() + "), got " + gradOutput.description());
  }
  if ((kind() == Kind::Max || kind() == Kind::Min) &&
      (!indices.defined() || indices.sizes() != l.outShape || indices.device() != input.device())) {
    throw Error(where(method) + "expected the input of the last forward (" + tensor::shape_str(indices.sizes()) +
                " outputs), got " + input.description() + ": call updateOutput first");
  }
}

const Tensor& ReductionBase::updateOutput(const Tensor& input) {
  const Layout l = checkInput(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, l.outShape, x);
  const Kind k = kind();
  if (k == Kind::Max || k == Kind::Min) ensure(indices, l.outShape, tensor::DType::Int64, x.device());
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (k == Kind::Sum || k == Kind::Mean) {
      kernels::reduce_sum<T>(x.data<T>(), output.data<T>(), l.outer, l.n, l.inner, k == Kind::Mean);
    } else {
      kernels::reduce_extremum<T>(k == Kind::Max, x.data<T>(), output.data<T>(), indices.data<int64_t>(), l.outer, l.n,
                                  l.inner);
    }
  });
  return output;
}

const Tensor& ReductionBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Layout l = checkInput(input, "updateGradInput");
  checkGradOutput(l, input, gradOutput, "updateGradInput");
  const Tensor gy = gradOutput.contiguous();
  ensure(gradInput, input.sizes(), input);
  const Kind k = kind();
  tensor::dispatch_f32_f64(input.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (k == Kind::Sum || k == Kind::Mean) {
      kernels::reduce_sum_backward<T>(gy.data<T>(), gradInput.data<T>(), l.outer, l.n, l.inner, k == Kind::Mean);
    } else {
      kernels::reduce_extremum_backward<T>(gy.data<T>(), indices.data<int64_t>(), gradInput.data<T>(), l.outer, l.n,
                                           l.inner);
    }
  });
  return gradInput;
}

tensor::Json ReductionBase::config() const { return tensor::Json::Object{{"dimension", dimension}}; }

}  // namespace nn
