// Rotary.cu: see Rotary.h.
#include "cudnn/kernels/Rotary.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cudnn/kernels/Dispatch.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // the rows past the grid are looped over
// invFreq travels in the kernel's parameters (constants of the options: a captured graph keeps
// them), up to this many pairs (head dims <= 512); past it the kernel computes them, with the
// device's pow, which may differ from the host's in the last place.
constexpr int kTablePairs = 256;

template <class A>
struct InvFreq {
  A v[kTablePairs];
};

struct Geometry {
  int64_t B, H, S, half;   // half = R/2 pairs
  int64_t sb, sh, ss, sd;  // x's strides
  int64_t first, second;   // pair i is (i * first, i * first + second)
  double theta;            // for the pairs past the table
  bool table, inverse;
};

__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ inline void sin_cos(float a, float* s, float* c) { sincosf(a, s, c); }
__device__ inline void sin_cos(double a, double* s, double* c) { sincos(a, s, c); }
__device__ inline float nan_of(float) { return __int_as_float(0x7fc00000); }
__device__ inline double nan_of(double) { return __longlong_as_double(0x7ff8000000000000LL); }

// nn::rotary_inv_freq's formula, for a pair past the table.
__device__ inline float inv_freq(float, double theta, int64_t i, int64_t R) {
  return __fdiv_rn(1.0f, powf(static_cast<float>(theta), __fdiv_rn(static_cast<float>(2 * i), static_cast<float>(R))));
}
__device__ inline double inv_freq(double, double theta, int64_t i, int64_t R) {
  return 1.0 / pow(theta, static_cast<double>(2 * i) / static_cast<double>(R));
}

template <class T, class A>
__global__ void rotary_kernel(T* x, Geometry g, const int64_t* offsets, InvFreq<A> table) {
  for (int64_t row = blockIdx.x; row < g.B * g.S; row += gridDim.x) {
    const int64_t b = row / g.S, s = row % g.S;
    const int64_t offset = offsets ? offsets[b] : 0;
    const A pos = static_cast<A>(offset + s);
    for (int64_t i = threadIdx.x; i < g.half; i += blockDim.x) {
      const A inv = g.table ? table.v[i] : inv_freq(A(0), g.theta, i, 2 * g.half);
      A sn, c;
      sin_cos(mul_rn(pos, inv), &sn, &c);
      if (offset < 0) sn = c = nan_of(A(0));  // See Note [Rotary offsets on the device]
      const int64_t ia = i * g.first * g.sd, ib = (i * g.first + g.second) * g.sd;
      for (int64_t h = threadIdx.y; h < g.H; h += blockDim.y) {
        T* head = x + b * g.sb + h * g.sh + s * g.ss;
        const A xa = static_cast<A>(head[ia]), xb = static_cast<A>(head[ib]);
        if (g.inverse) {
          head[ia] = T(add_rn(mul_rn(xa, c), mul_rn(xb, sn)));
          head[ib] = T(sub_rn(mul_rn(xb, c), mul_rn(xa, sn)));
        } else {
          head[ia] = T(sub_rn(mul_rn(xa, c), mul_rn(xb, sn)));
          head[ib] = T(add_rn(mul_rn(xb, c), mul_rn(xa, sn)));
        }
      }
    }
  }
}

}  // namespace

void rotary_embedding(const tensor::Tensor& x, const tensor::Tensor& offsets, int64_t rotaryDim, bool interleaved,
                      const std::vector<double>& invFreq, double theta, bool inverse) {
  if (x.numel() == 0) return;
  Geometry g{};
  g.B = x.size(0);
  g.H = x.size(1);
  g.S = x.size(2);
  g.half = rotaryDim / 2;
  g.sb = x.stride(0);
  g.sh = x.stride(1);
  g.ss = x.stride(2);
  g.sd = x.stride(3);
  g.first = interleaved ? 2 : 1;
  g.second = interleaved ? 1 : g.half;
  g.theta = theta;
  g.table = g.half <= kTablePairs;
  g.inverse = inverse;
  const int64_t* offs = offsets.defined() ? offsets.data<int64_t>() : nullptr;
  int tx = 1;
  while (tx < kThreads && tx < g.half) tx *= 2;
  const dim3 block(static_cast<unsigned>(tx), static_cast<unsigned>(kThreads / tx));
  const unsigned blocks = static_cast<unsigned>(std::min(g.B * g.S, kMaxBlocks));
  launch_floating("cudnn::kernels::rotary_embedding", x, [&]<class T, class A>(cudaStream_t stream) {
    InvFreq<A> table{};
    if (g.table) {
      for (int64_t i = 0; i < g.half; ++i) table.v[i] = static_cast<A>(invFreq[static_cast<size_t>(i)]);
    }
    rotary_kernel<T, A><<<blocks, block, 0, stream>>>(static_cast<T*>(x.raw_data()), g, offs, table);
  });
}

}  // namespace cudnn::kernels
