// Kernels.h: the element-wise, reduction and random kernels behind Tensor's operators,
// declared once and implemented twice: tensor/CpuKernels.cpp and tensor/cuda/CudaKernels.cu.
// Tensor.cpp validates (shapes, dtypes, devices) and broadcasts; kernels trust their
// arguments. Contract for every kernel: all tensors are on one device and have `out`'s
// shape (inputs broadcast by stride-0 views), any strides; inputs share out's dtype unless
// said otherwise. Internal to the tensor layer: not a public header.
#pragma once

#include <cstdint>

#include "tensor/Tensor.h"

namespace tensor::kernels {

enum class Unary : uint8_t {
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Square, Reciprocal, Sign, Relu, Floor, Ceil, Round
};
// Add/Sub scale b by alpha. Comparisons write 0/1 into a UInt8 `out`.
enum class Binary : uint8_t { Add, Sub, Mul, Div, Max, Min, Pow, Eq, Ne, Lt, Le, Gt, Ge };
enum class Reduce : uint8_t { Sum, Max, Min };
enum class Random : uint8_t { Uniform, Normal, Bernoulli };

struct Backend {
  void (*fill)(const Tensor& out, double value);
  void (*copy)(const Tensor& src, const Tensor& out);  // any dtypes, same device, same shape
  void (*unary)(Unary op, const Tensor& in, const Tensor& out);
  void (*binary)(Binary op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha);
  // out = a op s (or s op a when scalar_first); comparisons write UInt8.
  void (*binary_scalar)(Binary op, const Tensor& a, double s, bool scalar_first, const Tensor& out);
  void (*pow_scalar)(const Tensor& in, double exponent, const Tensor& out);
  void (*clamp)(const Tensor& in, double lo, double hi, const Tensor& out);
  // out += value * a * b  or  out += value * a / b
  void (*addcmul)(const Tensor& out, const Tensor& a, const Tensor& b, double value);
  void (*addcdiv)(const Tensor& out, const Tensor& a, const Tensor& b, double value);
  // Reduces a contiguous `in` viewed as [outer x n x inner] over n into `values` (contiguous,
  // outer*inner elements, in's dtype); Max/Min also write Int64 `indices` if it is defined.
  void (*reduce)(Reduce op, const Tensor& in, int64_t outer, int64_t n, int64_t inner,
                 const Tensor& values, const Tensor& indices);
  // Element i of contiguous `out` gets a draw from Philox(seed, offset + i).
  // Uniform(p1, p2) in [p1, p2); Normal(mean p1, std p2); Bernoulli(p1) gives 0/1.
  // `state` (CUDA only, for fills captured in a graph; else nullptr): device words {seed, base}
  // read when the kernel runs, which then draws from Philox(state[0], state[1] + offset + i).
  void (*random)(Random dist, const Tensor& out, double p1, double p2, uint64_t seed, uint64_t offset,
                 const uint64_t* state);
};

// Writes {seed, base} to a captured fill's device state words on the device's stream
// (Note [Random fills in CUDA graphs] in Cuda.h).
void cuda_set_random_state(uint64_t* state, uint64_t seed, uint64_t base, int device);

const Backend& cpu();
const Backend& cuda();  // throws "built without CUDA" in a CPU-only build
inline const Backend& backend_for(const Tensor& t) { return t.is_cuda() ? cuda() : cpu(); }

}  // namespace tensor::kernels
