// PoolCeil.cu: pooling with Torch's ceil-mode semantics, for the shapes where ceil mode
// adds windows that cuDNN (which sizes outputs by floor) cannot describe. Windows are
// clipped to the input for max, and for averages the divisor is the window clipped to the
// padded input (count_include_pad) or to the input (exclude), as THNN does. The backward
// pass gathers per input element over the windows covering it, so it is deterministic.
#include <cuda_runtime.h>

#include <cfloat>

#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/Pool.h"
#include "cudnn/kernels/PoolDims.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

struct Geometry {
  int64_t planes;        // N * C
  int in[3], out[3];     // D, H, W (D = 1 for 2-d)
  int k[3], s[3], p[3];
  int mode;              // PoolMode
};

template <class T>
using acc_of = tensor::acc_t<T>;

// Loads in the accumulation type (double stays double; 16-bit types widen to float).
template <class T>
__device__ inline acc_of<T> load(T v) {
  if constexpr (sizeof(T) == 8) return v;
  else return static_cast<float>(v);
}
template <class T>
__device__ inline T store(acc_of<T> v) {
  if constexpr (sizeof(T) == 8) return v;
  else return T(static_cast<float>(v));
}

__device__ inline void window(const Geometry& g, int d, int o, int& start, int& end, int& padded_end) {
  start = o * g.s[d] - g.p[d];
  padded_end = min(start + g.k[d], g.in[d] + g.p[d]);
  end = min(start + g.k[d], g.in[d]);
}

template <class T>
__device__ void pool_window(const Geometry& g, const T* plane, int od, int oh, int ow, acc_of<T>& value, int& arg) {
  using A = acc_of<T>;
  int s[3], e[3], pe[3];
  window(g, 0, od, s[0], e[0], pe[0]);
  window(g, 1, oh, s[1], e[1], pe[1]);
  window(g, 2, ow, s[2], e[2], pe[2]);
  const int64_t padded_count = static_cast<int64_t>(pe[0] - s[0]) * (pe[1] - s[1]) * (pe[2] - s[2]);
  for (int d = 0; d < 3; ++d) s[d] = max(s[d], 0);
  const bool is_max = g.mode == static_cast<int>(PoolMode::Max) || g.mode == static_cast<int>(PoolMode::MaxDeterministic);
  A acc = is_max ? A(-INFINITY) : A(0);
  arg = -1;
  for (int z = s[0]; z < e[0]; ++z)
    for (int y = s[1]; y < e[1]; ++y)
      for (int x = s[2]; x < e[2]; ++x) {
        const int idx = (z * g.in[1] + y) * g.in[2] + x;
        const A v = load(plane[idx]);
        if (is_max) {
          const bool acc_is_nan = acc != acc;  // a NaN stays the maximum once found
          if (!acc_is_nan && (arg < 0 || v > acc || v != v)) {
            acc = v;
            arg = idx;
          }
        } else {
          acc += v;
        }
      }
  if (!is_max) {
    const int64_t real = static_cast<int64_t>(max(e[0] - s[0], 0)) * max(e[1] - s[1], 0) * max(e[2] - s[2], 0);
    const int64_t count = g.mode == static_cast<int>(PoolMode::AverageExcPad) ? real : padded_count;
    if (g.mode != static_cast<int>(PoolMode::Sum)) acc = count > 0 ? acc / A(count) : A(0);  // sum: the total
  }
  value = acc;
}

template <class T>
__global__ void forward_kernel(Geometry g, const T* x, T* y, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int ow = i % g.out[2];
    const int oh = (i / g.out[2]) % g.out[1];
    const int od = (i / (int64_t(g.out[2]) * g.out[1])) % g.out[0];
    const int64_t plane = i / (int64_t(g.out[2]) * g.out[1] * g.out[0]);
    acc_of<T> v;
    int arg;
    pool_window(g, x + plane * int64_t(g.in[0]) * g.in[1] * g.in[2], od, oh, ow, v, arg);
    y[i] = store<T>(v);
  }
}

__device__ inline void covering(const Geometry& g, int d, int i, int& lo, int& hi) {
  // windows o with o*s - p <= i < o*s - p + k
  const int num = i + g.p[d] - g.k[d] + 1;
  lo = num <= 0 ? 0 : (num + g.s[d] - 1) / g.s[d];
  hi = min((i + g.p[d]) / g.s[d], g.out[d] - 1);
}

template <class T>
__global__ void backward_kernel(Geometry g, const T* x, const T* dy, T* dx, int64_t total) {
  using A = acc_of<T>;
  const bool is_max = g.mode == static_cast<int>(PoolMode::Max) || g.mode == static_cast<int>(PoolMode::MaxDeterministic);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int iw = i % g.in[2];
    const int ih = (i / g.in[2]) % g.in[1];
    const int id = (i / (int64_t(g.in[2]) * g.in[1])) % g.in[0];
    const int64_t plane = i / (int64_t(g.in[2]) * g.in[1] * g.in[0]);
    const T* xp = x + plane * int64_t(g.in[0]) * g.in[1] * g.in[2];
    const T* dyp = dy + plane * int64_t(g.out[0]) * g.out[1] * g.out[2];
    const int self = (id * g.in[1] + ih) * g.in[2] + iw;
    int lo[3], hi[3];
    covering(g, 0, id, lo[0], hi[0]);
    covering(g, 1, ih, lo[1], hi[1]);
    covering(g, 2, iw, lo[2], hi[2]);
    A grad = 0;
    for (int od = lo[0]; od <= hi[0]; ++od)
      for (int oh = lo[1]; oh <= hi[1]; ++oh)
        for (int ow = lo[2]; ow <= hi[2]; ++ow) {
          const int64_t o = (int64_t(od) * g.out[1] + oh) * g.out[2] + ow;
          const A gout = load(dyp[o]);
          if (is_max) {
            A v;
            int arg;
            pool_window(g, xp, od, oh, ow, v, arg);
            if (arg == self) grad += gout;
          } else {
            int s[3], e[3], pe[3];
            window(g, 0, od, s[0], e[0], pe[0]);
            window(g, 1, oh, s[1], e[1], pe[1]);
            window(g, 2, ow, s[2], e[2], pe[2]);
            const int64_t padded = int64_t(pe[0] - s[0]) * (pe[1] - s[1]) * (pe[2] - s[2]);
            const int64_t real = int64_t(e[0] - max(s[0], 0)) * (e[1] - max(s[1], 0)) * (e[2] - max(s[2], 0));
            if (g.mode == static_cast<int>(PoolMode::Sum)) grad += gout;
            else grad += gout / A(g.mode == static_cast<int>(PoolMode::AverageExcPad) ? real : padded);
          }
        }
    dx[i] = store<T>(grad);
  }
}

Geometry make_geometry(const Tensor& x, const Tensor& y, const PoolParams& p) {
  Geometry g{};
  g.planes = x.size(0) * x.size(1);
  set_pool_dims(g, x.sizes(), y.sizes(), p);
  g.mode = static_cast<int>(p.mode);
  return g;
}

int blocks_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535)); }

}  // namespace

void pool_ceil_forward(const Tensor& x, const Tensor& y, const PoolParams& p) {
  const Geometry g = make_geometry(x, y, p);
  const int64_t n = y.numel();
  if (n == 0) return;
  launch_floating("cudnn::pool (ceil mode)", x, [&]<class T, class>(cudaStream_t stream) {
    forward_kernel<T>
        <<<blocks_for(n), 256, 0, stream>>>(g, static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), n);
  });
}

void pool_ceil_backward(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p) {
  const Geometry g = make_geometry(x, dy, p);
  const int64_t n = x.numel();
  if (n == 0) return;
  launch_floating("cudnn::pool_grad (ceil mode)", x, [&]<class T, class>(cudaStream_t stream) {
    backward_kernel<T><<<blocks_for(n), 256, 0, stream>>>(g, static_cast<const T*>(x.raw_data()),
                                                          static_cast<const T*>(dy.raw_data()),
                                                          static_cast<T*>(dx.raw_data()), n);
  });
}

}  // namespace cudnn::kernels
