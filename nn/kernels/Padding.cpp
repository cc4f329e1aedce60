// Padding.cpp
#include "nn/kernels/Padding.h"

namespace nn::kernels {

namespace {
constexpr int64_t kParallelGrain = 1 << 15;  // below this many outputs one thread does it all
}  // namespace

void spatial_pad_forward(const tensor::Tensor& x, const tensor::Tensor& y, PadMode mode, SpatialPads pads,
                         double value) {
  const Planes in = planes_of(x), out = planes_of(y);
  tensor::dispatch_f32_f64(x.dtype(), "nn::kernels::spatial_pad_forward", [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    const T fill = static_cast<T>(value);
#pragma omp parallel for schedule(static) if (y.numel() >= kParallelGrain)
    for (int64_t p = 0; p < out.n * out.c; ++p) {
      const int64_t n = p / out.c, c = p % out.c;
      const T* xp = xd + n * in.sn + c * in.sc;
      T* yp = yd + n * out.sn + c * out.sc;
      for (int64_t oh = 0; oh < out.h; ++oh) {
        const int64_t ih = pad_source(mode, oh, in.h, pads.t);
        for (int64_t ow = 0; ow < out.w; ++ow) {
          const int64_t iw = pad_source(mode, ow, in.w, pads.l);
          yp[oh * out.sh + ow * out.sw] = ih < 0 || iw < 0 ? fill : xp[ih * in.sh + iw * in.sw];
        }
      }
    }
  });
}

void spatial_pad_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, PadMode mode, SpatialPads pads) {
  const Planes out = planes_of(gy), in = planes_of(gx);
  tensor::dispatch_f32_f64(gx.dtype(), "nn::kernels::spatial_pad_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gyd = gy.data<T>();
    T* gxd = gx.data<T>();
#pragma omp parallel for schedule(static) if (gy.numel() >= kParallelGrain)
    for (int64_t p = 0; p < in.n * in.c; ++p) {
      const int64_t n = p / in.c, c = p % in.c;
      const T* gp = gyd + n * out.sn + c * out.sc;
      T* xp = gxd + n * in.sn + c * in.sc;
      for (int64_t ih = 0; ih < in.h; ++ih) {
        const PadSpans sh = pad_spans(mode, ih, in.h, pads.t, out.h);
        for (int64_t iw = 0; iw < in.w; ++iw) {
          const PadSpans sw = pad_spans(mode, iw, in.w, pads.l, out.w);
          T sum = 0;
          for (int a = 0; a < sh.count; ++a) {
            for (int64_t oh = sh.lo[a]; oh < sh.hi[a]; ++oh) {
              for (int b = 0; b < sw.count; ++b) {
                for (int64_t ow = sw.lo[b]; ow < sw.hi[b]; ++ow) sum += gp[oh * out.sh + ow * out.sw];
              }
            }
          }
          xp[ih * in.sh + iw * in.sw] = sum;
        }
      }
    }
  });
}

}  // namespace nn::kernels
