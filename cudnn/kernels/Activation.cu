// Activation.cu: see Activation.h. Each pass is one functor over the tensor layer's element-wise
// launch (tensor/cuda/Elementwise.cuh), which packs 16 bytes per thread where it can.
#include "cudnn/kernels/Activation.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/SmoothActivations.cuh"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/Elementwise.cuh"

namespace cudnn::kernels {

namespace {

using tensor::cuda::elementwise::launch_elementwise;

// Note [ReLU kernels]: the comparisons are made in acc_t<T> (float for 16-bit data) and the
// result is the input's own bits or zero, so every dtype gives nn::kernels' values exactly.
template <class T>
struct ReluForward {
  __device__ void operator()(char* (&p)[2]) const {
    const T v = *reinterpret_cast<const T*>(p[1]);
    // false for a NaN, which then passes through (Note [NaN and Inf])
    *reinterpret_cast<T*>(p[0]) = static_cast<tensor::acc_t<T>>(v) <= tensor::acc_t<T>(0) ? T(tensor::acc_t<T>(0)) : v;
  }
};

template <class T>
struct ReluBackward {  // operands: dx, y, dy
  __device__ void operator()(char* (&p)[3]) const {
    const T o = *reinterpret_cast<const T*>(p[1]);
    const T g = *reinterpret_cast<const T*>(p[2]);
    *reinterpret_cast<T*>(p[0]) = static_cast<tensor::acc_t<T>>(o) > tensor::acc_t<T>(0) ? g : T(tensor::acc_t<T>(0));
  }
};

template <class T>
struct ClippedReluBackward {  // operands: dx, y, dy
  tensor::acc_t<T> ceiling;
  __device__ void operator()(char* (&p)[3]) const {
    using A = tensor::acc_t<T>;
    const A o = static_cast<A>(*reinterpret_cast<const T*>(p[1]));
    const T g = *reinterpret_cast<const T*>(p[2]);
    *reinterpret_cast<T*>(p[0]) = o > A(0) && o < ceiling ? g : T(tensor::acc_t<T>(0));
  }
};

// GELU, GELU's tanh form and SiLU: cudnn/kernels/SmoothActivations.cuh (the few rows' product
// applies them in its epilogue too).

// One rounding each way (a single product), so every dtype gives nn's bits; NaN > 0 is false,
// so a NaN input stays NaN forward and its gradient is dy * slope.
template <class T>
struct LeakyReluOp {
  tensor::acc_t<T> slope;
  template <class A>
  __device__ A operator()(A v) const {
    return v > A(0) ? v : v * slope;
  }
  template <class A>
  __device__ A operator()(A v, A g) const {
    return v > A(0) ? g : g * slope;
  }
};

// The element-wise staples (Note [Element-wise staples] in nn/kernels/Activation.h): nn's
// expressions in acc_t<T> with CUDA's fabs, sqrt, exp, log and pow. The backward functors of
// Sqrt, Exp, MulConstant and AddConstant take the output y for v (backward_reads_output).
template <class A>
__device__ A abs_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return fabsf(v);
  else
    return fabs(v);
}
template <class A>
__device__ A sqrt_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return sqrtf(v);
  else
    return sqrt(v);
}
template <class A>
__device__ A pow_of(A v, A e) {
  if constexpr (std::is_same_v<A, float>)
    return powf(v, e);
  else
    return pow(v, e);
}

struct AbsOp {
  template <class A>
  __device__ A operator()(A v) const {
    return abs_of(v);
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // dy sgn(x), sgn(NaN) = 0
    return g * (A(v > A(0)) - A(v < A(0)));
  }
};

struct SquareOp {
  template <class A>
  __device__ A operator()(A v) const {
    return v * v;
  }
  template <class A>
  __device__ A operator()(A v, A g) const {
    return g * (A(2) * v);
  }
};

struct SqrtOp {
  template <class A>
  __device__ A operator()(A v) const {
    return sqrt_of(v);
  }
  template <class A>
  __device__ A operator()(A y, A g) const {  // dy / (2 y)
    return g / (A(2) * y);
  }
};

struct ExpOp {
  template <class A>
  __device__ A operator()(A v) const {
    return exp_of(v);
  }
  template <class A>
  __device__ A operator()(A y, A g) const {
    return g * y;
  }
};

struct LogOp {
  template <class A>
  __device__ A operator()(A v) const {
    return log_of(v);
  }
  template <class A>
  __device__ A operator()(A v, A g) const {
    return g / v;
  }
};

template <class T>
struct PowerOp {
  tensor::acc_t<T> p, pm1;  // the exponent and exponent - 1, each rounded once from double
  template <class A>
  __device__ A operator()(A v) const {
    return pow_of(v, A(p));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // zero everywhere for p = 0, as PyTorch's
    return p == A(0) ? A(0) : g * (A(p) * pow_of(v, A(pm1)));
  }
};

template <class T>
struct MulConstantOp {
  tensor::acc_t<T> c;
  template <class A>
  __device__ A operator()(A v) const {
    return v * c;
  }
  template <class A>
  __device__ A operator()(A, A g) const {
    return g * c;
  }
};

template <class T>
struct AddConstantOp {
  tensor::acc_t<T> c;
  template <class A>
  __device__ A operator()(A v) const {
    return v + c;
  }
  template <class A>
  __device__ A operator()(A, A g) const {
    return g;
  }
};

template <class T, class Op>
struct MapForward {  // operands: y, x
  Op op;
  __device__ void operator()(char* (&p)[2]) const {
    using A = tensor::acc_t<T>;
    *reinterpret_cast<T*>(p[0]) = T(op(static_cast<A>(*reinterpret_cast<const T*>(p[1]))));
  }
};

template <class T, class Op>
struct MapBackward {  // operands: dx, x, dy
  Op op;
  __device__ void operator()(char* (&p)[3]) const {
    using A = tensor::acc_t<T>;
    *reinterpret_cast<T*>(p[0]) =
        T(op(static_cast<A>(*reinterpret_cast<const T*>(p[1])), static_cast<A>(*reinterpret_cast<const T*>(p[2]))));
  }
};

// Calls f(op) with mode's functor for data of type T; another mode is an error naming `kernel`.
template <class T, class F>
void with_op(nn::Activation mode, double coef, const char* kernel, F&& f) {
  using M = nn::Activation;
  switch (mode) {
    case M::GELU:
      return f(GeluOp{});
    case M::GELUTanh:
      return f(GeluTanhOp{});
    case M::SiLU:
      return f(SiluOp{});
    case M::LeakyReLU:
      return f(LeakyReluOp<T>{static_cast<tensor::acc_t<T>>(coef)});
    case M::Abs:
      return f(AbsOp{});
    case M::Square:
      return f(SquareOp{});
    case M::Sqrt:
      return f(SqrtOp{});
    case M::Exp:
      return f(ExpOp{});
    case M::Log:
      return f(LogOp{});
    case M::Power:
      return f(PowerOp<T>{static_cast<tensor::acc_t<T>>(coef), static_cast<tensor::acc_t<T>>(coef - 1)});
    case M::MulConstant:
      return f(MulConstantOp<T>{static_cast<tensor::acc_t<T>>(coef)});
    case M::AddConstant:
      return f(AddConstantOp<T>{static_cast<tensor::acc_t<T>>(coef)});
    default:
      throw tensor::Error(std::string(kernel) +
                          ": expected mode GELU, GELUTanh, SiLU, LeakyReLU, Abs, Square, Sqrt, Exp, Log, Power, "
                          "MulConstant or AddConstant, got mode " +
                          std::to_string(static_cast<int>(mode)));
  }
}

// PReLU over [outer x channels x inner]: element e is in channel (e / inner) % channels.
template <class T, class A, bool Backward>
__global__ void prelu_kernel(const T* x, const T* w, const T* dy, T* out, int64_t numel, int64_t channels,
                             int64_t inner) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < numel; e += int64_t(gridDim.x) * blockDim.x) {
    const A v = static_cast<A>(x[e]);
    const A a = static_cast<A>(w[(e / inner) % channels]);
    if constexpr (Backward) {
      const A g = static_cast<A>(dy[e]);
      out[e] = T(v > A(0) ? g : a * g);
    } else {
      out[e] = T(v > A(0) ? v : a * v);
    }
  }
}

constexpr int kPReluThreads = 256;

// One block per channel: the block's threads stride over the channel's outer * inner entries,
// then fold in a fixed order (tensor/cuda/BlockFold.cuh).
template <class T, class A>
__global__ void __launch_bounds__(kPReluThreads)
    prelu_grad_weight_kernel(const T* x, const T* dy, T* gw, A scale, int64_t outer, int64_t channels, int64_t inner) {
  __shared__ A shared[kPReluThreads];
  const int64_t c = blockIdx.x;
  A acc = A(0);
  for (int64_t j = threadIdx.x; j < outer * inner; j += kPReluThreads) {
    const int64_t e = ((j / inner) * channels + c) * inner + j % inner;
    const A v = static_cast<A>(x[e]);
    if (!(v > A(0))) acc += v * static_cast<A>(dy[e]);
  }
  shared[threadIdx.x] = acc;
  tensor::cuda::block_fold<kPReluThreads>([&](unsigned i, unsigned j) { shared[i] += shared[j]; });
  if (threadIdx.x == 0) gw[c] = T(static_cast<A>(gw[c]) + scale * shared[0]);
}

unsigned blocks_for(int64_t numel) {
  return static_cast<unsigned>(std::clamp<int64_t>((numel + kPReluThreads - 1) / kPReluThreads, 1, 65535));
}

}  // namespace

void activation_forward(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& y) {
  const char* kernel = "cudnn::kernels::activation_forward";
  dispatch_floating(kernel, x, [&](auto tag) {
    using T = decltype(tag);
    with_op<T>(mode, coef, kernel, [&](auto op) {
      launch_elementwise<2, T>({&y, &x}, MapForward<T, decltype(op)>{op}, kernel);
    });
  });
}

void activation_backward_from_input(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& dy,
                                    const tensor::Tensor& dx) {
  const char* kernel = "cudnn::kernels::activation_backward_from_input";
  if (backward_reads_output(mode)) {
    throw tensor::Error(std::string(kernel) + ": expected a mode whose gradient reads the input, got mode " +
                        std::to_string(static_cast<int>(mode)));
  }
  dispatch_floating(kernel, x, [&](auto tag) {
    using T = decltype(tag);
    with_op<T>(mode, coef, kernel, [&](auto op) {
      launch_elementwise<3, T>({&dx, &x, &dy}, MapBackward<T, decltype(op)>{op}, kernel);
    });
  });
}

void activation_backward_from_output(nn::Activation mode, double coef, const tensor::Tensor& y,
                                     const tensor::Tensor& dy, const tensor::Tensor& dx) {
  const char* kernel = "cudnn::kernels::activation_backward_from_output";
  if (!backward_reads_output(mode)) {
    throw tensor::Error(std::string(kernel) + ": expected mode Sqrt, Exp, MulConstant or AddConstant, got mode " +
                        std::to_string(static_cast<int>(mode)));
  }
  dispatch_floating(kernel, y, [&](auto tag) {
    using T = decltype(tag);
    with_op<T>(mode, coef, kernel, [&](auto op) {
      launch_elementwise<3, T>({&dx, &y, &dy}, MapBackward<T, decltype(op)>{op}, kernel);
    });
  });
}

void prelu_forward(const tensor::Tensor& x, const tensor::Tensor& w, const tensor::Tensor& y, int64_t channels,
                   int64_t inner) {
  const int64_t numel = x.numel();
  if (numel == 0) return;
  launch_floating("cudnn::kernels::prelu_forward", x, [&]<class T, class A>(cudaStream_t stream) {
    prelu_kernel<T, A, false><<<blocks_for(numel), kPReluThreads, 0, stream>>>(x.data<T>(), w.data<T>(), nullptr,
                                                                               y.data<T>(), numel, channels, inner);
  });
}

void prelu_backward(const tensor::Tensor& x, const tensor::Tensor& w, const tensor::Tensor& dy,
                    const tensor::Tensor& dx, int64_t channels, int64_t inner) {
  const int64_t numel = x.numel();
  if (numel == 0) return;
  launch_floating("cudnn::kernels::prelu_backward", x, [&]<class T, class A>(cudaStream_t stream) {
    prelu_kernel<T, A, true><<<blocks_for(numel), kPReluThreads, 0, stream>>>(x.data<T>(), w.data<T>(), dy.data<T>(),
                                                                              dx.data<T>(), numel, channels, inner);
  });
}

void prelu_acc_grad_weight(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& gw, double scale,
                           int64_t outer, int64_t channels, int64_t inner) {
  if (outer * inner == 0) return;  // nothing to add: gradWeight unchanged, as nn's (+ 0)
  launch_floating("cudnn::kernels::prelu_acc_grad_weight", x, [&]<class T, class A>(cudaStream_t stream) {
    prelu_grad_weight_kernel<T, A><<<static_cast<unsigned>(channels), kPReluThreads, 0, stream>>>(
        x.data<T>(), dy.data<T>(), gw.data<T>(), static_cast<A>(scale), outer, channels, inner);
  });
}

void relu_forward(const tensor::Tensor& x, const tensor::Tensor& y) {
  dispatch_floating("cudnn::kernels::relu_forward", x, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<2, T>({&y, &x}, ReluForward<T>{}, "cudnn::kernels::relu_forward");
  });
}

void relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx) {
  dispatch_floating("cudnn::kernels::relu_backward_from_output", y, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<3, T>({&dx, &y, &dy}, ReluBackward<T>{}, "cudnn::kernels::relu_backward_from_output");
  });
}

void clipped_relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx,
                                       double ceiling) {
  dispatch_floating("cudnn::kernels::clipped_relu_backward_from_output", y, [&](auto tag) {
    using T = decltype(tag);
    using A = tensor::acc_t<T>;
    // the forward clamps in float (double for double data) and rounds to T: compare with that
    const A c = static_cast<A>(T(static_cast<A>(ceiling)));
    launch_elementwise<3, T>({&dx, &y, &dy}, ClippedReluBackward<T>{c},
                             "cudnn::kernels::clipped_relu_backward_from_output");
  });
}

}  // namespace cudnn::kernels
