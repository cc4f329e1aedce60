// pool.h: cuDNN pooling, Theano's dnn_pool / its gradient, 2-D and 3-D.
//   pool(img, params)                              out
//   pool_grad(img, out, out_grad, params)          the gradient with respect to img
// img [N x C x (D) x H x W]. Modes: max; max_deterministic (the gradient of ties is
// deterministic; also used for max when the deterministic flag is set); average_inc_pad
// (the divisor counts padding); average_exc_pad (it does not); sum (Theano's: average_inc_pad
// times the window size). ceil_mode sizes the output as Torch's :ceil() does. cuDNN sizes
// pooling outputs by floor, so a configuration where ceil mode adds windows runs on our own
// kernel (cudnn/kernels/PoolCeil.cu) with Torch's semantics for those edge windows. The max
// gradient of channels-last data runs on our own kernel (cudnn/kernels/PoolMaxBackward.cu), which
// finds each window's maximum again from img by nn's rule and so reads no `out`; the flag
// pool.backward chooses where:
//   auto  (default) ours for channels-last data, cuDNN's call for row-major data;
//   ours  ours for both layouts (row-major data as [N*C x 1 x spatial] channels-last);
//   cudnn cuDNN's call for both (ceil-mode shapes that add windows: PoolCeil.cu), as before.
// Set it with set_flags("pool.backward=ours") or CUDNN_NN_FLAGS; it is config().pool_backward,
// restored by ScopedConfig (ScopedPoolBackward sets and restores it alone). The choice changes
// no result (both are nn's gradient), only speed: it is there to measure the layouts against
// each other.
#pragma once

#include <string>
#include <vector>

#include "cudnn/Config.h"
#include "cudnn/Functional.h"  // PoolMode, PoolParams, pool and pool_grad
#include "cudnn/core/Descriptors.h"
#include "cudnn/core/ScopedSetting.h"
#include "cudnn/kernels/Pool.h"  // our kernels

namespace cudnn {

// The flag pool.backward (PoolBackward and its names are cudnn/Config.h's).
inline PoolBackward pool_backward() { return config().pool_backward; }
using ScopedPoolBackward = ScopedSetting<&Config::pool_backward>;

// The output shape (floor or ceil, as Torch computes it); throws naming the shapes when the
// input is too small or the padding too large.
Shape pool_output_shape(const Shape& img, const PoolParams& p, const std::string& where);

class PoolPlan {
 public:
  void forward(const Tensor& x, const Tensor& y, const PoolParams& p);
  // y may be undefined where backward_reads_output says it is not read.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const PoolParams& p);
  // Whether backward reads y for this x, dx and dy (in x's layout), under the flag pool.backward:
  // cuDNN's call does, our max kernel does not.
  static bool backward_reads_output(const Tensor& x, const PoolParams& p);

 private:
  PoolingDescriptor pool_desc_;
  TensorDescriptor x_desc_, y_desc_;
};

// pool and pool_grad: cudnn/Functional.h.

}  // namespace cudnn
