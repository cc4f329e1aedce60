// Padding.cu
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/Padding.h"
#include "cudnn/kernels/SpatialWalk.cuh"

namespace cudnn::kernels {

using nn::kernels::PadMode;
using nn::kernels::Planes;

namespace {

constexpr int kThreads = 256;

template <class T, class A>
__global__ void pad_forward_kernel(const T* x, T* y, Planes in, Planes out, PadMode mode, int64_t padL, int64_t padT,
                                   int64_t total, bool channelsLast) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const SpatialIndex4 o = spatial_index(e, out, channelsLast);
  const int64_t ih = nn::kernels::pad_source(mode, o.h, in.h, padT);
  const int64_t iw = nn::kernels::pad_source(mode, o.w, in.w, padL);
  T v = static_cast<T>(A(0));
  if (ih >= 0 && iw >= 0) v = x[o.n * in.sn + o.c * in.sc + ih * in.sh + iw * in.sw];
  y[o.n * out.sn + o.c * out.sc + o.h * out.sh + o.w * out.sw] = v;
}

template <class T, class A>
__global__ void pad_backward_kernel(const T* gy, T* gx, Planes in, Planes out, PadMode mode, int64_t padL, int64_t padT,
                                    int64_t total, bool channelsLast) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const SpatialIndex4 i = spatial_index(e, in, channelsLast);
  const nn::kernels::PadSpans sh = nn::kernels::pad_spans(mode, i.h, in.h, padT, out.h);
  const nn::kernels::PadSpans sw = nn::kernels::pad_spans(mode, i.w, in.w, padL, out.w);
  const T* gp = gy + i.n * out.sn + i.c * out.sc;
  A sum = 0;
  for (int a = 0; a < sh.count; ++a) {
    for (int64_t oh = sh.lo[a]; oh < sh.hi[a]; ++oh) {
      for (int b = 0; b < sw.count; ++b) {
        for (int64_t ow = sw.lo[b]; ow < sw.hi[b]; ++ow) sum += static_cast<A>(gp[oh * out.sh + ow * out.sw]);
      }
    }
  }
  gx[i.n * in.sn + i.c * in.sc + i.h * in.sh + i.w * in.sw] = static_cast<T>(sum);
}

unsigned blocks_for(int64_t total) { return static_cast<unsigned>((total + kThreads - 1) / kThreads); }

}  // namespace

void spatial_pad_forward(const tensor::Tensor& x, const tensor::Tensor& y, PadMode mode,
                         nn::kernels::SpatialPads pads) {
  const int64_t total = y.numel();
  if (total == 0) return;
  const Planes in = nn::kernels::planes_of(x), out = nn::kernels::planes_of(y);
  launch_floating("cudnn::kernels::spatial_pad_forward", y, [&]<class T, class A>(cudaStream_t stream) {
    pad_forward_kernel<T, A>
        <<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()),
                                                     in, out, mode, pads.l, pads.t, total, walks_channels_last(out));
  });
}

void spatial_pad_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, PadMode mode,
                          nn::kernels::SpatialPads pads) {
  const int64_t total = gx.numel();
  if (total == 0) return;
  const Planes out = nn::kernels::planes_of(gy), in = nn::kernels::planes_of(gx);
  launch_floating("cudnn::kernels::spatial_pad_backward", gx, [&]<class T, class A>(cudaStream_t stream) {
    pad_backward_kernel<T, A><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(gy.raw_data()), static_cast<T*>(gx.raw_data()), in, out, mode, pads.l, pads.t, total,
        walks_channels_last(in));
  });
}

}  // namespace cudnn::kernels
