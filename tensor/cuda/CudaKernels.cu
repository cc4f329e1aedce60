// CudaKernels.cu: the CUDA implementation of tensor/Kernels.h, value for value the twin of
// tensor/CpuKernels.cpp. One strided element-wise kernel (dimensions coalesced, a 1-D fast
// path) runs every element-wise operation through a small functor; one shared-memory
// kernel runs every reduction; Philox fills random tensors exactly as the CPU does.
// Everything runs on the tensor's device stream (Note [One stream per device], Cuda.h).
// Note [GPU arithmetic like the CPU's]: values are computed in the CPU's types (float for
// float16/bfloat16, double for int64/uint8, which is also how exp, log, ... are defined on
// integers, then truncated and clamped; non-finite results such as an integer division by
// zero become 0), and products are rounded before sums (__fmul_rn, ...) so nvcc contracts
// nothing into an FMA the CPU does not do. Add, Sub, Mul, Div, Sqrt, Rsqrt, addcmul, addcdiv
// and conversions therefore match the CPU bit for bit; exp, log, tanh, pow, ... use CUDA's
// libdevice and may differ from the C library by an ulp or two.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>
#include <vector>

#include "tensor/BinaryDispatch.h"
#include "tensor/Cuda.h"
#include "tensor/Kernels.h"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Elementwise.cuh"

namespace tensor::kernels {

namespace {

using cuda::elementwise::kThreads;

// ------------------------------------------------------------------ types and device math

template <class T>
constexpr bool is_16bit_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type the CPU kernels compute T in: see Note [GPU arithmetic like the CPU's].
template <class T>
using compute_t = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;

template <class C, class T>
__device__ __forceinline__ C to_compute(T v) {
  if constexpr (is_16bit_v<T>) {
    return static_cast<C>(static_cast<float>(v));
  } else {
    return static_cast<C>(v);
  }
}

// A computed value back to T; integers truncate and clamp, non-finite values become 0.
template <class T, class V>
__host__ __device__ __forceinline__ T cast_to(V v) {
  if constexpr (std::is_integral_v<T>) {
    const double d = static_cast<double>(v);
    if (!isfinite(d)) return T(0);
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    const double t = trunc(d);
    if (t <= lo) return std::numeric_limits<T>::lowest();
    if (t >= hi) return std::numeric_limits<T>::max();  // 2^63 itself does not fit int64
    return static_cast<T>(t);
  } else if constexpr (is_16bit_v<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class C>
__device__ __forceinline__ bool is_nan(C x) {
  return x != x;  // false for integers; we never build with fast-math
}

// Float and double overloads of the C math functions, without relying on CUDA's overload set.
namespace dm {
#define TENSOR_DEVICE_MATH(name, float_fn, double_fn)                          \
  __device__ __forceinline__ float name(float x) { return ::float_fn(x); }     \
  __device__ __forceinline__ double name(double x) { return ::double_fn(x); }
TENSOR_DEVICE_MATH(abs, fabsf, fabs)
TENSOR_DEVICE_MATH(exp, expf, exp)
TENSOR_DEVICE_MATH(log, logf, log)
TENSOR_DEVICE_MATH(sqrt, sqrtf, sqrt)
TENSOR_DEVICE_MATH(tanh, tanhf, tanh)
TENSOR_DEVICE_MATH(floor, floorf, floor)
TENSOR_DEVICE_MATH(ceil, ceilf, ceil)
TENSOR_DEVICE_MATH(rint, rintf, rint)  // round half to even, like std::nearbyint
#undef TENSOR_DEVICE_MATH
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
}  // namespace dm

template <Unary Op, class C>
__device__ __forceinline__ C unary_value(C x) {
  if constexpr (Op == Unary::Neg) return -x;
  if constexpr (Op == Unary::Abs) return dm::abs(x);
  if constexpr (Op == Unary::Exp) return dm::exp(x);
  if constexpr (Op == Unary::Log) return dm::log(x);
  if constexpr (Op == Unary::Sqrt) return dm::sqrt(x);
  if constexpr (Op == Unary::Rsqrt) return C(1) / dm::sqrt(x);
  if constexpr (Op == Unary::Tanh) return dm::tanh(x);
  if constexpr (Op == Unary::Sigmoid) return C(1) / (C(1) + dm::exp(-x));
  if constexpr (Op == Unary::Square) return dm::mul(x, x);
  if constexpr (Op == Unary::Reciprocal) return C(1) / x;
  if constexpr (Op == Unary::Sign) return static_cast<C>((x > C(0)) - (x < C(0)));
  if constexpr (Op == Unary::Relu) return x > C(0) ? x : (is_nan(x) ? x : C(0));
  if constexpr (Op == Unary::Floor) return dm::floor(x);
  if constexpr (Op == Unary::Ceil) return dm::ceil(x);
  if constexpr (Op == Unary::Round) return dm::rint(x);
}

// Comparisons give C(0) or C(1). Max/Min propagate NaN from either side.
template <Binary Op, class C>
__device__ __forceinline__ C binary_value(C a, C b, C alpha) {
  if constexpr (Op == Binary::Add) return dm::add(a, dm::mul(alpha, b));
  if constexpr (Op == Binary::Sub) return dm::sub(a, dm::mul(alpha, b));
  if constexpr (Op == Binary::Mul) return dm::mul(a, b);
  if constexpr (Op == Binary::Div) return a / b;
  if constexpr (Op == Binary::Max) return (is_nan(a) || a > b) ? a : b;
  if constexpr (Op == Binary::Min) return (is_nan(a) || a < b) ? a : b;
  if constexpr (Op == Binary::Pow) return dm::pow(a, b);
  if constexpr (Op == Binary::Eq) return a == b;
  if constexpr (Op == Binary::Ne) return a != b;
  if constexpr (Op == Binary::Lt) return a < b;
  if constexpr (Op == Binary::Le) return a <= b;
  if constexpr (Op == Binary::Gt) return a > b;
  if constexpr (Op == Binary::Ge) return a >= b;
}

template <Binary Op>
constexpr bool is_comparison_v = Op >= Binary::Eq;

// ------------------------------------------------------------------ launch plumbing
// (tensor/cuda/Elementwise.cuh; the multiprocessor count is cached here, once per device)

}  // namespace
}  // namespace tensor::kernels

namespace tensor::cuda::elementwise {
int multiprocessor_count(int device) {
  static std::array<std::atomic<int>, 64> cached{};
  std::atomic<int>* slot = device >= 0 && device < 64 ? &cached[static_cast<size_t>(device)] : nullptr;
  if (slot && slot->load() > 0) return slot->load();
  int count = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  if (slot) slot->store(count);
  return count;
}
}  // namespace tensor::cuda::elementwise

namespace tensor::kernels {
namespace {

using cuda::elementwise::grid_for;
using cuda::elementwise::launch_elementwise;
using cuda::elementwise::multiprocessor_count;
using cuda::elementwise::stream_of;

// ------------------------------------------------------------------ element-wise functors

template <class T>
struct FillFn {
  T value;
  __device__ void operator()(char* (&p)[1]) const { *reinterpret_cast<T*>(p[0]) = value; }
};

template <class Word>
struct CopyBytesFn {
  __device__ void operator()(char* (&p)[2]) const {
    *reinterpret_cast<Word*>(p[0]) = *reinterpret_cast<const Word*>(p[1]);
  }
};

// The CPU's conversion rule: 16-bit floats go through float when the target holds a float
// exactly as well; everything else goes through double.
template <class O, class I>
struct ConvertFn {
  __device__ void operator()(char* (&p)[2]) const {
    const I v = *reinterpret_cast<const I*>(p[1]);
    if constexpr (is_16bit_v<I> && (is_16bit_v<O> || std::is_same_v<O, float>)) {
      *reinterpret_cast<O*>(p[0]) = O(static_cast<float>(v));
    } else {
      *reinterpret_cast<O*>(p[0]) = cast_to<O>(to_compute<double>(v));
    }
  }
};

template <class T, Unary Op>
struct UnaryFn {
  using C = compute_t<T>;
  __device__ void operator()(char* (&p)[2]) const {
    const C x = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    *reinterpret_cast<T*>(p[0]) = cast_to<T>(unary_value<Op>(x));
  }
};

template <class T, Binary Op>
struct BinaryFn {
  using C = compute_t<T>;
  using Out = std::conditional_t<is_comparison_v<Op>, uint8_t, T>;
  C alpha;
  __device__ void operator()(char* (&p)[3]) const {
    const C a = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    const C b = to_compute<C>(*reinterpret_cast<const T*>(p[2]));
    const C v = binary_value<Op>(a, b, alpha);
    if constexpr (is_comparison_v<Op>) {
      *reinterpret_cast<Out*>(p[0]) = static_cast<uint8_t>(v != C(0));
    } else {
      *reinterpret_cast<Out*>(p[0]) = cast_to<T>(v);
    }
  }
};

template <class T, Binary Op>
struct BinaryScalarFn {
  using C = compute_t<T>;
  using Out = std::conditional_t<is_comparison_v<Op>, uint8_t, T>;
  C scalar;
  bool scalar_first;
  __device__ void operator()(char* (&p)[2]) const {
    const C x = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    const C v = scalar_first ? binary_value<Op>(scalar, x, C(1)) : binary_value<Op>(x, scalar, C(1));
    if constexpr (is_comparison_v<Op>) {
      *reinterpret_cast<Out*>(p[0]) = static_cast<uint8_t>(v != C(0));
    } else {
      *reinterpret_cast<Out*>(p[0]) = cast_to<T>(v);
    }
  }
};

template <class T>
struct PowScalarFn {
  using C = compute_t<T>;
  C exponent;
  bool square;  // x^2 as x*x, as the CPU does
  __device__ void operator()(char* (&p)[2]) const {
    const C x = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    *reinterpret_cast<T*>(p[0]) = cast_to<T>(square ? dm::mul(x, x) : dm::pow(x, exponent));
  }
};

template <class T>
struct ClampFn {
  using C = compute_t<T>;
  C lo, hi;
  __device__ void operator()(char* (&p)[2]) const {
    const C x = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    const C above = x < lo ? lo : x;  // std::min(std::max(x, lo), hi), NaN kept
    *reinterpret_cast<T*>(p[0]) = cast_to<T>(is_nan(x) ? x : (hi < above ? hi : above));
  }
};

template <class T, bool Divide>
struct AddcFn {
  using C = compute_t<T>;
  C value;
  __device__ void operator()(char* (&p)[3]) const {
    T& o = *reinterpret_cast<T*>(p[0]);
    const C x = to_compute<C>(*reinterpret_cast<const T*>(p[1]));
    const C y = to_compute<C>(*reinterpret_cast<const T*>(p[2]));
    const C term = Divide ? x / y : dm::mul(x, y);
    o = cast_to<T>(dm::add(to_compute<C>(o), dm::mul(value, term)));
  }
};

// ------------------------------------------------------------------ element-wise entry points

void fill(const Tensor& out, double value) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<1, T>({&out}, FillFn<T>{cast_to<T>(value)}, "fill");
  });
}

void copy(const Tensor& src, const Tensor& out) {
  if (out.numel() == 0) return;
  if (src.dtype() == out.dtype()) {
    if (same_dense_layout(src, out)) {  // row-major, channels-last, ...: one block of bytes
      if (src.raw_data() == out.raw_data()) return;
      const int device = out.device().index;
      cuda::DeviceGuard guard(device);
      CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), src.raw_data(), out.nbytes(),
                                 cudaMemcpyDeviceToDevice, stream_of(device)));
      return;
    }
    switch (itemsize(out.dtype())) {
      case 1: return launch_elementwise<2>({&out, &src}, CopyBytesFn<uint8_t>{}, "copy");
      case 2: return launch_elementwise<2>({&out, &src}, CopyBytesFn<uint16_t>{}, "copy");
      case 4: return launch_elementwise<2>({&out, &src}, CopyBytesFn<uint32_t>{}, "copy");
      default: return launch_elementwise<2>({&out, &src}, CopyBytesFn<uint64_t>{}, "copy");
    }
  }
  dispatch(out.dtype(), [&](auto out_tag) {
    using O = decltype(out_tag);
    dispatch(src.dtype(), [&](auto in_tag) {
      using I = decltype(in_tag);
      if constexpr (!std::is_same_v<O, I>) {
        launch_elementwise<2>({&out, &src}, ConvertFn<O, I>{}, "copy");
      }
    });
  });
}

template <Unary Op>
void unary_typed(const Tensor& in, const Tensor& out) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<2, T>({&out, &in}, UnaryFn<T, Op>{}, "unary");
  });
}

void unary(Unary op, const Tensor& in, const Tensor& out) {
  switch (op) {
#define CASE(X) \
  case Unary::X: return unary_typed<Unary::X>(in, out);
    CASE(Neg) CASE(Abs) CASE(Exp) CASE(Log) CASE(Sqrt) CASE(Rsqrt) CASE(Tanh) CASE(Sigmoid)
    CASE(Square) CASE(Reciprocal) CASE(Sign) CASE(Relu) CASE(Floor) CASE(Ceil) CASE(Round)
#undef CASE
  }
}

template <Binary Op>
void binary_typed(const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    using Uniform = std::conditional_t<is_comparison_v<Op>, void, T>;  // comparisons write uint8
    launch_elementwise<3, Uniform>({&out, &a, &b}, BinaryFn<T, Op>{static_cast<C>(alpha)}, "binary");
  });
}

void binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  with_binary_op(op, [&](auto k) { binary_typed<decltype(k)::value>(a, b, out, alpha); });
}

template <Binary Op>
void binary_scalar_typed(const Tensor& a, double s, bool scalar_first, const Tensor& out) {
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    using Uniform = std::conditional_t<is_comparison_v<Op>, void, T>;
    launch_elementwise<2, Uniform>({&out, &a}, BinaryScalarFn<T, Op>{static_cast<C>(s), scalar_first},
                                   "binary_scalar");
  });
}

void binary_scalar(Binary op, const Tensor& a, double s, bool scalar_first, const Tensor& out) {
  with_binary_op(op, [&](auto k) { binary_scalar_typed<decltype(k)::value>(a, s, scalar_first, out); });
}

void pow_scalar(const Tensor& in, double exponent, const Tensor& out) {
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    launch_elementwise<2, T>({&out, &in}, PowScalarFn<T>{static_cast<C>(exponent), exponent == 2.0},
                          "pow_scalar");
  });
}

void clamp(const Tensor& in, double lo, double hi, const Tensor& out) {
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    launch_elementwise<2, T>({&out, &in}, ClampFn<T>{static_cast<C>(lo), static_cast<C>(hi)}, "clamp");
  });
}

template <bool Divide>
void addc(const Tensor& out, const Tensor& a, const Tensor& b, double value) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    launch_elementwise<3>({&out, &a, &b}, AddcFn<T, Divide>{static_cast<C>(value)},
                          Divide ? "addcdiv" : "addcmul");
  });
}

void addcmul(const Tensor& out, const Tensor& a, const Tensor& b, double value) { addc<false>(out, a, b, value); }
void addcdiv(const Tensor& out, const Tensor& a, const Tensor& b, double value) { addc<true>(out, a, b, value); }

// ------------------------------------------------------------------ reductions
// Note [CUDA reductions]: a block of kThreads = bx * by threads reduces bx neighbouring
// outputs; its by rows split the reduced dimension, and gridDim.x blocks split it further
// when there are too few outputs to fill the device (the full sum of a large tensor). Each
// thread folds its share serially, the block folds the by partials in a shared-memory tree,
// and when gridDim.x > 1 a second launch folds the per-block partials the same way. Small
// reduced dimensions (n < 64) use bx = kThreads: one thread per output. Sums accumulate in
// float for float/float16/bfloat16, double for float64, uint64 for the integers (wrapping
// as two's complement, like the CPU's: signed overflow would be undefined); Max/Min
// keep the first index on ties and the first NaN when there is one.

constexpr int64_t kThreadPerOutputBelow = 64;
constexpr int64_t kMaxBlocksPerOutput = 1024;
// Elements a thread folds at least before the dimension is split over more blocks. Each fold
// waits on its load, so a few outputs over a long dimension are latency-bound: at 32 a thread
// the argmax over a decode step's 50304 logits ran 7 blocks, 28 loads deep, 16 us; at 4, about
// 50 blocks and a second pass over their partials.
constexpr int64_t kFoldsPerThread = 4;

template <class Acc>
struct Partial {
  Acc value;
  int64_t index;  // position in the reduced dimension; -1: nothing folded yet
};

template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, acc_t<T>>;

template <class Acc>
struct SumOp {
  __device__ static Partial<Acc> combine(Partial<Acc> a, Partial<Acc> b) {
    return {a.value + b.value, 0};
  }
};

template <class Acc, bool Max>
struct ExtremumOp {
  __device__ static Partial<Acc> combine(Partial<Acc> a, Partial<Acc> b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index <= b.index ? a : b;
      return a_nan ? a : b;
    }
    if (a.value == b.value) return a.index <= b.index ? a : b;
    return (Max ? a.value > b.value : a.value < b.value) ? a : b;
  }
};

template <class Acc, class In>
__device__ __forceinline__ Partial<Acc> load_partial(const In& x, int64_t k) {
  if constexpr (std::is_same_v<In, Partial<Acc>>) {
    return x;
  } else {
    return {to_compute<Acc>(x), k};
  }
}

template <class Acc>
struct PartialWriter {
  Partial<Acc>* partials;  // [outputs x blocks per output]
  __device__ void operator()(int64_t o, Partial<Acc> v) const {
    partials[o * gridDim.x + blockIdx.x] = v;
  }
};

template <class T, class Acc>
struct FinalWriter {
  T* values;
  int64_t* indices;  // may be null
  __device__ void operator()(int64_t o, Partial<Acc> v) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      values[o] = static_cast<int64_t>(v.value);  // modular: the wrapped sum
    } else {
      values[o] = cast_to<T>(v.value);
    }
    if (indices) indices[o] = v.index;
  }
};

// `in` is [outputs / inner x n x inner] (row-major); see Note [CUDA reductions].
template <class Op, class Acc, class In, class Writer>
__global__ void __launch_bounds__(kThreads) reduce_kernel(const In* in, int64_t outputs, int64_t n,
                                                          int64_t inner, Writer write) {
  __shared__ Partial<Acc> shared[kThreads];
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  for (int64_t group = blockIdx.y; group * bx < outputs; group += gridDim.y) {
    const int64_t o = group * bx + tx;
    Partial<Acc> acc{Acc(0), -1};
    if (o < outputs) {
      const In* row = in + (o / inner) * n * inner + o % inner;
      for (int64_t k = static_cast<int64_t>(blockIdx.x) * by + ty; k < n;
           k += static_cast<int64_t>(gridDim.x) * by) {
        acc = Op::combine(acc, load_partial<Acc>(row[k * inner], k));
      }
    }
    shared[ty * bx + tx] = acc;
    __syncthreads();
    for (int half = by / 2; half > 0; half /= 2) {
      if (ty < half) shared[ty * bx + tx] = Op::combine(shared[ty * bx + tx], shared[(ty + half) * bx + tx]);
      __syncthreads();
    }
    if (ty == 0 && o < outputs) write(o, shared[tx]);
    __syncthreads();  // `shared` is reused by the next group
  }
}

// Frees device scratch memory at scope exit; the stream orders the reuse (Cuda.h).
struct Scratch {
  void* ptr;
  int device;
  ~Scratch() { cuda::deallocate(ptr, device); }
};

template <class Op, class T, class Acc>
void reduce_typed(const Tensor& in, int64_t outer, int64_t n, int64_t inner, const Tensor& values,
                  const Tensor& indices) {
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  const int device = in.device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = stream_of(device);
  const T* x = static_cast<const T*>(in.raw_data());
  const FinalWriter<T, Acc> final_writer{static_cast<T*>(values.raw_data()),
                                         indices.defined() ? indices.data<int64_t>() : nullptr};

  int bx = kThreads;
  if (n >= kThreadPerOutputBelow) {
    bx = 1;
    while (bx < 32 && bx < inner) bx *= 2;  // inner == 1: one block row per output
  }
  const int by = kThreads / bx;
  const int64_t groups = (outputs + bx - 1) / bx;
  const int64_t target_blocks = static_cast<int64_t>(multiprocessor_count(device)) * 4;
  int64_t blocks_per_output = 1;
  if (bx < kThreads && groups < target_blocks) {
    const int64_t enough = (n + int64_t{by} * kFoldsPerThread - 1) / (int64_t{by} * kFoldsPerThread);
    blocks_per_output = std::clamp<int64_t>(std::min(target_blocks / groups, enough), 1, kMaxBlocksPerOutput);
  }
  const dim3 block(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  const dim3 grid(static_cast<unsigned>(blocks_per_output),
                  static_cast<unsigned>(std::min<int64_t>(groups, 65535)));
  if (blocks_per_output == 1) {
    reduce_kernel<Op, Acc><<<grid, block, 0, stream>>>(x, outputs, n, inner, final_writer);
    CUDA_CHECK_LAUNCH("tensor reduce kernel");
    return;
  }
  const Scratch scratch{cuda::allocate(static_cast<size_t>(outputs * blocks_per_output) * sizeof(Partial<Acc>), device),
                        device};
  auto* partials = static_cast<Partial<Acc>*>(scratch.ptr);
  reduce_kernel<Op, Acc><<<grid, block, 0, stream>>>(x, outputs, n, inner, PartialWriter<Acc>{partials});
  CUDA_CHECK_LAUNCH("tensor reduce kernel (partials)");
  const dim3 second_grid(1, static_cast<unsigned>(std::min<int64_t>(outputs, 65535)));
  reduce_kernel<Op, Acc><<<second_grid, dim3(1, kThreads), 0, stream>>>(
      static_cast<const Partial<Acc>*>(partials), outputs, blocks_per_output, int64_t{1}, final_writer);
  CUDA_CHECK_LAUNCH("tensor reduce kernel (final)");
}

void reduce(Reduce op, const Tensor& in, int64_t outer, int64_t n, int64_t inner, const Tensor& values,
            const Tensor& indices) {
  TENSOR_CHECK(n > 0 || op == Reduce::Sum, "tensor::reduce: cannot take max/min over an empty dimension");
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (op == Reduce::Sum) {
      if (n == 0) return fill(values, 0.0);
      using Acc = sum_acc_t<T>;
      return reduce_typed<SumOp<Acc>, T, Acc>(in, outer, n, inner, values, Tensor());
    }
    using Acc = acc_t<T>;  // exact for every T
    if (op == Reduce::Max) return reduce_typed<ExtremumOp<Acc, true>, T, Acc>(in, outer, n, inner, values, indices);
    return reduce_typed<ExtremumOp<Acc, false>, T, Acc>(in, outer, n, inner, values, indices);
  });
}

// ------------------------------------------------------------------ random

// The CPU's formulas in the CPU's order, each product rounded before the sum.
template <class T>
__global__ void __launch_bounds__(kThreads) random_kernel(T* out, int64_t numel, Random dist, double p1,
                                                          double p2, uint64_t seed, uint64_t offset,
                                                          const uint64_t* state) {
  if (state) {  // a fill captured in a CUDA graph: the generator's state as of this replay
    seed = state[0];
    offset += state[1];
  }
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    const uint64_t counter = offset + static_cast<uint64_t>(i);
    double v = 0;
    if (dist == Random::Uniform) {
      v = __dadd_rn(p1, __dmul_rn(__dsub_rn(p2, p1), Philox::uniform(seed, counter)));
    } else if (dist == Random::Normal) {
      double u1 = 0, u2 = 0;
      Philox::uniform_pair(seed, counter, u1, u2);
      const double radius = ::sqrt(__dmul_rn(-2.0, ::log(u1)));
      const double angle = __dmul_rn(2.0 * std::numbers::pi, u2);
      v = __dadd_rn(p1, __dmul_rn(__dmul_rn(p2, radius), ::cos(angle)));
    } else {
      v = Philox::uniform(seed, counter) < p1 ? 1.0 : 0.0;
    }
    out[i] = cast_to<T>(v);
  }
}

__global__ void set_random_state_kernel(uint64_t* state, uint64_t seed, uint64_t base) {
  state[0] = seed;
  state[1] = base;
}

void random(Random dist, const Tensor& out, double p1, double p2, uint64_t seed, uint64_t offset,
            const uint64_t* state) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const int device = out.device().index;
  cuda::DeviceGuard guard(device);
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    random_kernel<T><<<grid_for(numel, device), kThreads, 0, stream_of(device)>>>(
        static_cast<T*>(out.raw_data()), numel, dist, p1, p2, seed, offset, state);
  });
  CUDA_CHECK_LAUNCH("tensor random kernel");
}

}  // namespace

void cuda_set_random_state(uint64_t* state, uint64_t seed, uint64_t base, int device) {
  cuda::DeviceGuard guard(device);
  set_random_state_kernel<<<1, 1, 0, stream_of(device)>>>(state, seed, base);
  CUDA_CHECK_LAUNCH("tensor::cuda::Graph::replay (random state)");
}

const Backend& cuda() {
  static const Backend backend{fill,     copy,    unary,   binary,  binary_scalar, pow_scalar,
                               clamp,    addcmul, addcdiv, reduce,  random};
  return backend;
}

}  // namespace tensor::kernels
