// SpatialIndex.h: the index arithmetic of the spatial paddings and up-samplings, one copy for
// both backends: the CPU kernels (nn/kernels/Padding.cpp, UpSampling.cpp) and the CUDA kernels
// (cudnn/kernels/Padding.cu, UpSampling.cu) include it, so they read the same elements and sum
// each gradient over the same outputs in the same order (Note [Backward as a gather]). Plain
// integer arithmetic: no CUDA header, and nothing rounds differently on the device.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NN_HOST_DEVICE __host__ __device__
#else
#define NN_HOST_DEVICE
#endif

namespace nn::kernels {

enum class PadMode : int { Constant, Reflect, Replicate };

// Note [Backward as a gather]
// A padding's or an up-sampling's backward sums gradOutput over the outputs that read each
// input element. Scattering with atomics (PyTorch's CUDA kernels) adds in a different order
// on every run; here each gradInput element is one thread (one loop step on the CPU) that
// walks the outputs reading it, in increasing order, so both backends and every run give the
// same sums. The outputs reading input index i along one axis form at most three runs of
// consecutive indices (PadSpans; reflection's mirror images, replication's edges), or one run
// for the up-samplings (nearest: [i s, (i + 1) s); bilinear: the outputs whose left tap is i - 1
// or i, found by bisection on the forward's own tap function, so no output is missed or
// counted twice).

// The input index that output index `o` reads along an axis of input size n with `before`
// elements added in front (negative: cropped); -1 for a constant pad. Reflection wants
// before and after < n (checked by the modules), so one mirror suffices.
NN_HOST_DEVICE inline int64_t pad_source(PadMode mode, int64_t o, int64_t n, int64_t before) {
  int64_t x = o - before;
  if (mode == PadMode::Constant) return x >= 0 && x < n ? x : -1;
  if (mode == PadMode::Replicate) return x < 0 ? 0 : (x >= n ? n - 1 : x);
  if (x < 0) x = -x;
  if (x >= n) x = 2 * (n - 1) - x;
  return x;
}

// The outputs (of `out` along the axis) that read input index i: count runs [lo[k], hi[k]),
// in increasing order, none empty.
struct PadSpans {
  int64_t lo[3], hi[3];
  int count = 0;
  NN_HOST_DEVICE void add(int64_t a, int64_t b, int64_t out) {
    a = a < 0 ? 0 : a;
    b = b > out ? out : b;
    if (a < b) {
      lo[count] = a;
      hi[count] = b;
      ++count;
    }
  }
};

NN_HOST_DEVICE inline PadSpans pad_spans(PadMode mode, int64_t i, int64_t n, int64_t before, int64_t out) {
  PadSpans s;
  const int64_t direct = i + before;
  if (mode == PadMode::Constant) {
    s.add(direct, direct + 1, out);
  } else if (mode == PadMode::Reflect) {
    if (i > 0) s.add(before - i, before - i + 1, out);  // x = -i mirrors onto i
    s.add(direct, direct + 1, out);
    if (i < n - 1) s.add(before + 2 * (n - 1) - i, before + 2 * (n - 1) - i + 1, out);  // x = 2 (n - 1) - i
  } else {
    const int64_t a = i == 0 ? 0 : direct, b = i == n - 1 ? out : direct + 1;  // the edges take every x past them
    s.add(a, b, out);
  }
  return s;
}

// Bilinear taps of output index o along an axis, input size in, output size out, PyTorch's
// F.interpolate(mode='bilinear') source coordinate taken exactly as a fraction num / den:
//   align_corners:  src = o (in - 1) / (out - 1)  (0 where out == 1)
//   otherwise:      src = (o + 1/2) in / out - 1/2, clamped at 0
// i0 = floor(src), i1 = i0 + 1 but at the last input, and the weight of i1 is rem / den.
struct BilinearTap {
  int64_t i0, i1, rem, den;
};

NN_HOST_DEVICE inline BilinearTap bilinear_tap(int64_t o, int64_t in, int64_t out, bool alignCorners) {
  int64_t num, den;
  if (alignCorners) {
    num = out > 1 ? o * (in - 1) : 0;
    den = out > 1 ? out - 1 : 1;
  } else {
    num = (2 * o + 1) * in - out;
    den = 2 * out;
    if (num < 0) num = 0;
  }
  BilinearTap t;
  t.i0 = num / den;
  t.rem = num % den;
  t.den = den;
  t.i1 = t.i0 < in - 1 ? t.i0 + 1 : t.i0;
  return t;
}

// The outputs [lo, hi) whose taps include input index i: those with i0 in {i - 1, i} (i0 never
// falls as o grows).
NN_HOST_DEVICE inline int64_t bilinear_first_output(int64_t i0AtLeast, int64_t in, int64_t out, bool alignCorners) {
  int64_t lo = 0, hi = out;  // the first o with i0(o) >= i0AtLeast, or out
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (bilinear_tap(mid, in, out, alignCorners).i0 >= i0AtLeast) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The weight output tap t gives input index i, as a fraction of t.den: both taps where they
// coincide (the last input).
NN_HOST_DEVICE inline int64_t bilinear_weight_num(const BilinearTap& t, int64_t i) {
  return (t.i0 == i ? t.den - t.rem : 0) + (t.i1 == i ? t.rem : 0);
}

// Nearest neighbour (Torch's integer scales; PyTorch's mode='nearest'): output o reads input
// floor(o in / out), exactly; the outputs reading i start at ceil(i out / in).
NN_HOST_DEVICE inline int64_t nearest_source(int64_t o, int64_t in, int64_t out) { return o * in / out; }
NN_HOST_DEVICE inline int64_t nearest_first_output(int64_t i, int64_t in, int64_t out) {
  return (i * out + in - 1) / in;
}

// A 3-d [C x H x W] or 4-d [N x C x H x W] tensor's sizes and strides as 4-d (n 1 and its
// stride 0 for a 3-d one).
struct Planes {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
};

template <class TensorT>
Planes planes_of(const TensorT& t) {
  const bool batch = t.dim() == 4;
  return {batch ? t.size(0) : 1,   t.size(-3),   t.size(-2),   t.size(-1),
          batch ? t.stride(0) : 0, t.stride(-3), t.stride(-2), t.stride(-1)};
}

}  // namespace nn::kernels
