// Activation.cu: see Activation.h. Each pass is one functor over the tensor layer's element-wise
// launch (tensor/cuda/Elementwise.cuh), which packs 16 bytes per thread where it can.
#include "cudnn/kernels/Activation.h"

#include <string>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
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

// GELU, SiLU and LeakyReLU: nn::kernels' expressions (nn/kernels/Activation.cpp) in acc_t<T>, term
// for term and in the same order, so that infinities and NaNs come out as nn's. The constants are
// nn's: 1/sqrt(2), 1/sqrt(2 pi), sqrt(2/pi) and the tanh form's cubic coefficient.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

struct GeluOp {
  template <class A>
  __device__ A operator()(A v) const {
    return v * A(0.5) * (A(1) + erf_of(v * A(kSqrtHalf)));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // d/dx x Phi(x) = Phi(x) + x phi(x)
    const A cdf = A(0.5) * (A(1) + erf_of(v * A(kSqrtHalf)));
    const A pdf = A(kInvSqrt2Pi) * exp_of(A(-0.5) * v * v);
    return g * (cdf + v * pdf);
  }
};

struct GeluTanhOp {
  template <class A>
  __device__ A operator()(A v) const {
    const A inner = A(kSqrt2OverPi) * (v + A(kGeluCubic) * v * v * v);
    return A(0.5) * v * (A(1) + tanh_of(inner));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {
    const A t = tanh_of(A(kSqrt2OverPi) * (v + A(kGeluCubic) * v * v * v));
    const A dinner = A(kSqrt2OverPi) * (A(1) + A(3 * kGeluCubic) * v * v);
    return g * (A(0.5) * (A(1) + t) + A(0.5) * v * (A(1) - t * t) * dinner);
  }
};

struct SiluOp {
  template <class A>
  __device__ A operator()(A v) const {
    return v / (A(1) + exp_of(-v));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // s (1 + x (1 - s)), s = sigmoid(x)
    const A s = A(1) / (A(1) + exp_of(-v));
    return g * s * (A(1) + v * (A(1) - s));
  }
};

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
    *reinterpret_cast<T*>(p[0]) = T(op(static_cast<A>(*reinterpret_cast<const T*>(p[1])),
                                       static_cast<A>(*reinterpret_cast<const T*>(p[2]))));
  }
};

// Calls f(op) with mode's functor for data of type T; another mode is an error naming `kernel`.
template <class T, class F>
void with_op(nn::Activation mode, double coef, const char* kernel, F&& f) {
  using M = nn::Activation;
  switch (mode) {
    case M::GELU: return f(GeluOp{});
    case M::GELUTanh: return f(GeluTanhOp{});
    case M::SiLU: return f(SiluOp{});
    case M::LeakyReLU: return f(LeakyReluOp<T>{static_cast<tensor::acc_t<T>>(coef)});
    default:
      throw tensor::Error(std::string(kernel) + ": expected mode GELU, GELUTanh, SiLU or LeakyReLU, got mode " +
                          std::to_string(static_cast<int>(mode)));
  }
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

void activation_backward_from_input(nn::Activation mode, double coef, const tensor::Tensor& x,
                                    const tensor::Tensor& dy, const tensor::Tensor& dx) {
  const char* kernel = "cudnn::kernels::activation_backward_from_input";
  dispatch_floating(kernel, x, [&](auto tag) {
    using T = decltype(tag);
    with_op<T>(mode, coef, kernel, [&](auto op) {
      launch_elementwise<3, T>({&dx, &x, &dy}, MapBackward<T, decltype(op)>{op}, kernel);
    });
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
