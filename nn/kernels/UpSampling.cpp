// UpSampling.cpp
#include "nn/kernels/UpSampling.h"

#include "nn/kernels/SpatialIndex.h"

namespace nn::kernels {

namespace {
constexpr int64_t kParallelGrain = 1 << 15;  // below this many elements one thread does it all
}  // namespace

void upsample_forward(const tensor::Tensor& x, const tensor::Tensor& y, Resampling r) {
  const Planes in = planes_of(x), out = planes_of(y);
  tensor::dispatch_f32_f64(x.dtype(), "nn::kernels::upsample_forward", [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
#pragma omp parallel for schedule(static) if (y.numel() >= kParallelGrain)
    for (int64_t p = 0; p < out.n * out.c; ++p) {
      const int64_t n = p / out.c, c = p % out.c;
      const T* xp = xd + n * in.sn + c * in.sc;
      T* yp = yd + n * out.sn + c * out.sc;
      for (int64_t oh = 0; oh < out.h; ++oh) {
        for (int64_t ow = 0; ow < out.w; ++ow) {
          T v;
          if (!r.bilinear) {
            v = xp[nearest_source(oh, in.h, out.h) * in.sh + nearest_source(ow, in.w, out.w) * in.sw];
          } else {
            const BilinearTap th = bilinear_tap(oh, in.h, out.h, r.alignCorners);
            const BilinearTap tw = bilinear_tap(ow, in.w, out.w, r.alignCorners);
            const T lh = static_cast<T>(th.rem) / static_cast<T>(th.den);
            const T lw = static_cast<T>(tw.rem) / static_cast<T>(tw.den);
            const T* r0 = xp + th.i0 * in.sh;
            const T* r1 = xp + th.i1 * in.sh;
            v = (1 - lh) * ((1 - lw) * r0[tw.i0 * in.sw] + lw * r0[tw.i1 * in.sw]) +
                lh * ((1 - lw) * r1[tw.i0 * in.sw] + lw * r1[tw.i1 * in.sw]);
          }
          yp[oh * out.sh + ow * out.sw] = v;
        }
      }
    }
  });
}

void upsample_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, Resampling r) {
  const Planes out = planes_of(gy), in = planes_of(gx);
  tensor::dispatch_f32_f64(gx.dtype(), "nn::kernels::upsample_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gyd = gy.data<T>();
    T* gxd = gx.data<T>();
#pragma omp parallel for schedule(static) if (gy.numel() >= kParallelGrain)
    for (int64_t p = 0; p < in.n * in.c; ++p) {
      const int64_t n = p / in.c, c = p % in.c;
      const T* gp = gyd + n * out.sn + c * out.sc;
      T* xp = gxd + n * in.sn + c * in.sc;
      for (int64_t ih = 0; ih < in.h; ++ih) {
        for (int64_t iw = 0; iw < in.w; ++iw) {
          T sum = 0;
          if (!r.bilinear) {
            const int64_t h1 = nearest_first_output(ih + 1, in.h, out.h),
                          w1 = nearest_first_output(iw + 1, in.w, out.w);
            for (int64_t oh = nearest_first_output(ih, in.h, out.h); oh < h1; ++oh) {
              for (int64_t ow = nearest_first_output(iw, in.w, out.w); ow < w1; ++ow)
                sum += gp[oh * out.sh + ow * out.sw];
            }
          } else {
            const int64_t h0 = bilinear_first_output(ih - 1, in.h, out.h, r.alignCorners);
            const int64_t h1 = bilinear_first_output(ih + 1, in.h, out.h, r.alignCorners);
            const int64_t w0 = bilinear_first_output(iw - 1, in.w, out.w, r.alignCorners);
            const int64_t w1 = bilinear_first_output(iw + 1, in.w, out.w, r.alignCorners);
            for (int64_t oh = h0; oh < h1; ++oh) {
              const BilinearTap th = bilinear_tap(oh, in.h, out.h, r.alignCorners);
              const T wh = static_cast<T>(bilinear_weight_num(th, ih)) / static_cast<T>(th.den);
              for (int64_t ow = w0; ow < w1; ++ow) {
                const BilinearTap tw = bilinear_tap(ow, in.w, out.w, r.alignCorners);
                const T ww = static_cast<T>(bilinear_weight_num(tw, iw)) / static_cast<T>(tw.den);
                sum += wh * ww * gp[oh * out.sh + ow * out.sw];
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
