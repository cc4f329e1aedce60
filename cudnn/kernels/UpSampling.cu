// UpSampling.cu
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/SpatialWalk.cuh"
#include "cudnn/kernels/UpSampling.h"

namespace cudnn::kernels {

using nn::kernels::BilinearTap;
using nn::kernels::Planes;

namespace {

constexpr int kThreads = 256;

template <class T, class A>
__global__ void upsample_forward_kernel(const T* x, T* y, Planes in, Planes out, bool bilinear, bool alignCorners,
                                        int64_t total, bool channelsLast) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const SpatialIndex4 o = spatial_index(e, out, channelsLast);
  const T* xp = x + o.n * in.sn + o.c * in.sc;
  A v;
  if (!bilinear) {
    v = static_cast<A>(xp[nn::kernels::nearest_source(o.h, in.h, out.h) * in.sh +
                          nn::kernels::nearest_source(o.w, in.w, out.w) * in.sw]);
  } else {
    const BilinearTap th = nn::kernels::bilinear_tap(o.h, in.h, out.h, alignCorners);
    const BilinearTap tw = nn::kernels::bilinear_tap(o.w, in.w, out.w, alignCorners);
    const A lh = static_cast<A>(th.rem) / static_cast<A>(th.den);
    const A lw = static_cast<A>(tw.rem) / static_cast<A>(tw.den);
    const T* r0 = xp + th.i0 * in.sh;
    const T* r1 = xp + th.i1 * in.sh;
    v = (1 - lh) * ((1 - lw) * static_cast<A>(r0[tw.i0 * in.sw]) + lw * static_cast<A>(r0[tw.i1 * in.sw])) +
        lh * ((1 - lw) * static_cast<A>(r1[tw.i0 * in.sw]) + lw * static_cast<A>(r1[tw.i1 * in.sw]));
  }
  y[o.n * out.sn + o.c * out.sc + o.h * out.sh + o.w * out.sw] = static_cast<T>(v);
}

template <class T, class A>
__global__ void upsample_backward_kernel(const T* gy, T* gx, Planes in, Planes out, bool bilinear, bool alignCorners,
                                         int64_t total, bool channelsLast) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const SpatialIndex4 i = spatial_index(e, in, channelsLast);
  const T* gp = gy + i.n * out.sn + i.c * out.sc;
  A sum = 0;
  if (!bilinear) {
    const int64_t h1 = nn::kernels::nearest_first_output(i.h + 1, in.h, out.h);
    const int64_t w0 = nn::kernels::nearest_first_output(i.w, in.w, out.w);
    const int64_t w1 = nn::kernels::nearest_first_output(i.w + 1, in.w, out.w);
    for (int64_t oh = nn::kernels::nearest_first_output(i.h, in.h, out.h); oh < h1; ++oh) {
      for (int64_t ow = w0; ow < w1; ++ow) sum += static_cast<A>(gp[oh * out.sh + ow * out.sw]);
    }
  } else {
    const int64_t h0 = nn::kernels::bilinear_first_output(i.h - 1, in.h, out.h, alignCorners);
    const int64_t h1 = nn::kernels::bilinear_first_output(i.h + 1, in.h, out.h, alignCorners);
    const int64_t w0 = nn::kernels::bilinear_first_output(i.w - 1, in.w, out.w, alignCorners);
    const int64_t w1 = nn::kernels::bilinear_first_output(i.w + 1, in.w, out.w, alignCorners);
    for (int64_t oh = h0; oh < h1; ++oh) {
      const BilinearTap th = nn::kernels::bilinear_tap(oh, in.h, out.h, alignCorners);
      const A wh = static_cast<A>(nn::kernels::bilinear_weight_num(th, i.h)) / static_cast<A>(th.den);
      for (int64_t ow = w0; ow < w1; ++ow) {
        const BilinearTap tw = nn::kernels::bilinear_tap(ow, in.w, out.w, alignCorners);
        const A ww = static_cast<A>(nn::kernels::bilinear_weight_num(tw, i.w)) / static_cast<A>(tw.den);
        sum += wh * ww * static_cast<A>(gp[oh * out.sh + ow * out.sw]);
      }
    }
  }
  gx[i.n * in.sn + i.c * in.sc + i.h * in.sh + i.w * in.sw] = static_cast<T>(sum);
}

unsigned blocks_for(int64_t total) { return static_cast<unsigned>((total + kThreads - 1) / kThreads); }

}  // namespace

void upsample_forward(const tensor::Tensor& x, const tensor::Tensor& y, nn::kernels::Resampling r) {
  const int64_t total = y.numel();
  if (total == 0) return;
  const Planes in = nn::kernels::planes_of(x), out = nn::kernels::planes_of(y);
  launch_floating("cudnn::kernels::upsample_forward", y, [&]<class T, class A>(cudaStream_t stream) {
    upsample_forward_kernel<T, A><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), in, out, r.bilinear, r.alignCorners, total,
        walks_channels_last(out));
  });
}

void upsample_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, nn::kernels::Resampling r) {
  const int64_t total = gx.numel();
  if (total == 0) return;
  const Planes out = nn::kernels::planes_of(gy), in = nn::kernels::planes_of(gx);
  launch_floating("cudnn::kernels::upsample_backward", gx, [&]<class T, class A>(cudaStream_t stream) {
    upsample_backward_kernel<T, A><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(gy.raw_data()), static_cast<T*>(gx.raw_data()), in, out, r.bilinear, r.alignCorners,
        total, walks_channels_last(in));
  });
}

}  // namespace cudnn::kernels
