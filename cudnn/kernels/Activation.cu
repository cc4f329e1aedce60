// Activation.cu: see Activation.h. Each pass is one functor over the tensor layer's element-wise
// launch (tensor/cuda/Elementwise.cuh), which packs 16 bytes per thread where it can.
#include "cudnn/kernels/Activation.h"

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

}  // namespace

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
