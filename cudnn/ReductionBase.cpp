// ReductionBase.cpp: buffers around cudnn/kernels/Reduce.h, as nn::ReductionBase.
#include "cudnn/ReductionBase.h"

#include "cudnn/kernels/Reduce.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

using Kind = nn::ReductionBase::Kind;

void reduction_forward(nn::ReductionBase& m, const Tensor& input, const nn::ReductionBase::Layout& l) {
  const Tensor x = input.contiguous();
  nn::ensure(m.output, l.outShape, x);
  const Kind k = m.kind();
  if (k == Kind::Sum || k == Kind::Mean) {
    kernels::reduce_sum(x, m.output, l.outer, l.n, l.inner, k == Kind::Mean);
    return;
  }
  nn::ensure(m.indices, l.outShape, tensor::DType::Int64, x.device());
  kernels::reduce_extremum(k == Kind::Max, x, m.output, m.indices, l.outer, l.n, l.inner);
}

void reduction_backward(nn::ReductionBase& m, const Tensor& input, const Tensor& gradOutput,
                        const nn::ReductionBase::Layout& l) {
  const Tensor gy = gradOutput.contiguous();
  nn::ensure(m.gradInput, input.sizes(), input);
  const Kind k = m.kind();
  if (k == Kind::Sum || k == Kind::Mean) {
    kernels::reduce_sum_backward(gy, m.gradInput, l.outer, l.n, l.inner, k == Kind::Mean);
  } else {
    kernels::reduce_extremum_backward(gy, m.indices, m.gradInput, l.outer, l.n, l.inner);
  }
}

}  // namespace cudnn::detail
