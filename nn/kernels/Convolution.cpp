// Convolution.cpp: im2col/col2im written once for three (right-aligned) spatial dims, and the
// three passes of a grouped convolution as one gemm per sample and group.
#include "nn/kernels/Convolution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "nn/kernels/Parallel.h"
#include "tensor/Blas.h"

namespace nn::kernels {

using tensor::blas::gemm;

bool ConvGeometry::pointwise() const {
  for (int d = 0; d < 3; ++d) {
    if (k[d] != 1 || stride[d] != 1 || pad[d] != 0) return false;
  }
  return true;
}

namespace {
// One sample's multiply-adds decide how many threads share the batch; the workspace size and
// every pass ask here, so they agree.
int conv_threads(const ConvGeometry& g) { return batch_threads(g.batch, g.outC * g.colRows() * g.outSpatial()); }
// The weight gradient splits the batch only while a per-thread partial gradient (outC x colRows)
// is no larger than a column buffer (colRows x outSpatial); layers with more planes than pixels
// go sample by sample, each gemm threaded by Eigen, instead of holding a gradient per thread.
int weight_threads(const ConvGeometry& g) { return g.outC <= g.outSpatial() ? conv_threads(g) : 1; }

// Note [Spatial tiles]
// The column matrix of a large image leaves the caches between im2col writing it and the gemm
// reading it: ResNet-50's 3x3 convolutions at 56x56 unfold to 576 x 3136 floats (7 MB), and
// at batch 1 ran at half PyTorch's speed on the GPU host's two cores where the deeper layers
// kept up (VGG's first layers at 224x224 held 115 MB of columns per thread). So the forward
// pass cuts a sample's output positions into tiles of about kTileElements column elements,
// unfolds one tile at a time and multiplies it into those columns of y (gemm with ldc = the
// plane's size). A sample of a batch-parallel pass walks its tiles on its thread; a lone
// sample (a batch smaller than the team) gives the tiles to the team, which shares no data.
// The tiles depend on the geometry alone, never on the threads or the batch, so a sample gets
// the same bits alone or in a batch, on any number of threads (the gemm of a column can
// depend on the product's width).
constexpr int64_t kTileElements = int64_t{1} << 17;  // 512 KB of float columns
struct Tiles {
  int64_t columns = 0;  // output positions per tile (the last may have fewer)
  int64_t count = 0;    // 0: not tiled
};
Tiles forward_tiles(const ConvGeometry& g) {
  const int64_t R = g.colRows(), P = g.outSpatial();
  if (g.pointwise() || R * P <= 4 * kTileElements) return {};  // columns that stay in a core's cache
  // a multiple of 8 tiles, so that 2, 4 or 8 threads get as many each, of at least 16 columns
  int64_t count = (R * P + kTileElements - 1) / kTileElements;
  count = std::min((count + 7) / 8 * 8, (P + 15) / 16);
  if (count <= 1) return {};
  const int64_t columns = (P + count - 1) / count;
  return {columns, (P + columns - 1) / columns};
}
// Threads that hold a tile's columns at once: the batch's, or the team's over one sample's tiles.
int64_t tile_threads(const ConvGeometry& g, const Tiles& t) {
  const int batch = conv_threads(g);
  return batch > 1 ? batch : std::min<int64_t>(max_threads(), t.count);
}
}  // namespace

int64_t conv_workspace_size(const ConvGeometry& g, ConvPass pass) {
  if (pass == ConvPass::Forward) {
    if (const Tiles t = forward_tiles(g); t.count > 0) return tile_threads(g, t) * g.colRows() * t.columns;
  }
  const bool weight = pass == ConvPass::BackwardFilter;
  const int64_t threads = weight ? weight_threads(g) : conv_threads(g);
  const int64_t cols = g.pointwise() ? 0 : g.colRows() * g.outSpatial();
  int64_t size = threads * cols;
  if (weight && threads > 1) size += threads * g.outC * g.colRows();
  return size;
}

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The outputs o in [lo, hi) of one dim whose input o * stride + off falls inside [0, n).
struct Range {
  int64_t lo, hi;
  bool contains(int64_t o) const { return o >= lo && o < hi; }
};
Range valid_range(int64_t n, int64_t out, int64_t stride, int64_t off) {
  const int64_t lo = std::clamp<int64_t>(-floor_div(off, stride), 0, out);
  const int64_t hi = std::clamp<int64_t>(floor_div(n - 1 - off, stride) + 1, lo, out);
  return {lo, hi};
}

// Note [Shifted runs]
// A stride-1 convolution whose output has its input's size in every dim (3x3 with padding 1:
// ResNet's, VGG's, the fashion network's) unfolds each kernel offset's row as the image plane
// shifted by that offset, with zeros where the window leaves the image. The general walk below
// copies it a piece of an output row at a time: 14 floats at 14x14, where the per-piece work
// made im2col write its columns at 8 GB/s on two cores (3.6 ms a pass of the fashion network's
// second convolution). Here the rows valid in the outer dims are one shifted copy, then the
// columns outside the image are zeroed (the copy put the neighbouring row's elements there).
bool same_size_stride1(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    if (g.stride[d] != 1 || g.in[d] != g.out[d]) return false;
  }
  return true;
}

// ToCol: rows = the plane unfolded. Otherwise the rows are added into the plane, as unfold_plane
// does, after their entries outside the image are zeroed: the rows are scratch (the columns of
// a backward-data product), and adding +0 changes no sum that starts from +0, NaN and Inf
// included, so the sums come out bit for bit as the general walk's.
template <bool ToCol, class T>
void unfold_plane_shifted(std::conditional_t<ToCol, const T*, T*> plane, T* rows, const ConvGeometry& g);

// Walks the kernelSpatial() column rows of one channel against its image plane. ToCol copies
// the plane into the rows (zeros where the window leaves the image); otherwise the rows are
// added into the plane. Ranges of valid outputs are computed per kernel offset, so the inner
// loop has no bounds test. Only the output positions [p0, p1) are walked: column j of a row is
// position p0 + j (Note [Spatial tiles]).
template <bool ToCol, class T>
void unfold_plane(std::conditional_t<ToCol, const T*, T*> plane, std::conditional_t<ToCol, T*, const T*> rows,
                  const ConvGeometry& g, int64_t p0, int64_t p1) {
  const auto& [in0, in1, in2] = g.in;
  const auto& [out0, out1, out2] = g.out;
  const int64_t P = p1 - p0;
  if (P <= 0) return;
  for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
    const int64_t off0 = k0 * g.dilation[0] - g.pad[0];
    const Range r0 = valid_range(in0, out0, g.stride[0], off0);
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
      const int64_t off1 = k1 * g.dilation[1] - g.pad[1];
      const Range r1 = valid_range(in1, out1, g.stride[1], off1);
      for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
        const int64_t off2 = k2 * g.dilation[2] - g.pad[2];
        const Range r2 = valid_range(in2, out2, g.stride[2], off2);
        const int64_t s2 = g.stride[2];
        auto row = rows + ((k0 * g.k[1] + k1) * g.k[2] + k2) * P;
        // output row q (o0, o1 flattened) covers positions [q out2, (q + 1) out2)
        for (int64_t q = p0 / out2; q * out2 < p1; ++q) {
          const int64_t o0 = q / out1, o1 = q % out1;
          const int64_t a = std::max<int64_t>(p0 - q * out2, 0), b = std::min(p1 - q * out2, out2);
          auto dst = row + (q * out2 + a - p0);  // output o2 of this row is dst[o2 - a]
          if (!r0.contains(o0) || !r1.contains(o1)) {
            if constexpr (ToCol) std::fill(dst, dst + (b - a), T(0));
            continue;
          }
          const int64_t i0 = o0 * g.stride[0] + off0, i1 = o1 * g.stride[1] + off1;
          // the image element of output o2 is plane[base + o2 * s2], in bounds for o2 in r2
          const int64_t base = (i0 * in1 + i1) * in2 + off2;
          const int64_t lo = std::clamp(r2.lo, a, b), hi = std::clamp(r2.hi, lo, b);
          if constexpr (ToCol) {
            std::fill(dst, dst + (lo - a), T(0));
            if (s2 == 1) {
              std::copy_n(plane + (base + lo), hi - lo, dst + (lo - a));
            } else {
              for (int64_t o2 = lo; o2 < hi; ++o2) dst[o2 - a] = plane[base + o2 * s2];
            }
            std::fill(dst + (hi - a), dst + (b - a), T(0));
          } else if (s2 == 1) {
            T* to = plane + (base + lo);
            const T* from = dst + (lo - a);
            // rows and planes never overlap
#pragma omp simd
            for (int64_t j = 0; j < hi - lo; ++j) to[j] += from[j];
          } else {
            for (int64_t o2 = lo; o2 < hi; ++o2) plane[base + o2 * s2] += dst[o2 - a];
          }
        }
      }
    }
  }
}

template <bool ToCol, class T>
void unfold_plane_shifted(std::conditional_t<ToCol, const T*, T*> plane, T* rows, const ConvGeometry& g) {
  const int64_t n0 = g.out[0], n1 = g.out[1], n2 = g.out[2];  // = g.in (not a structured binding: clang 14
  // cannot capture one in a lambda)
  const int64_t S = n0 * n1 * n2, rowLength = n1 * n2;
  for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
    const int64_t off0 = k0 * g.dilation[0] - g.pad[0];
    const Range r0 = valid_range(n0, n0, 1, off0);
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
      const int64_t off1 = k1 * g.dilation[1] - g.pad[1];
      const Range r1 = valid_range(n1, n1, 1, off1);
      for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
        const int64_t off2 = k2 * g.dilation[2] - g.pad[2];
        const Range r2 = valid_range(n2, n2, 1, off2);
        const int64_t shift = (off0 * n1 + off1) * n2 + off2;  // position p reads plane[p + shift]
        T* row = rows + ((k0 * g.k[1] + k1) * g.k[2] + k2) * S;
        for (int64_t o0 = 0; o0 < n0; ++o0) {
          T* block = row + o0 * rowLength;  // output rows (o0, *)
          if (!r0.contains(o0)) {
            if constexpr (ToCol) std::fill_n(block, rowLength, T(0));
            continue;
          }
          if constexpr (ToCol) {
            std::fill_n(block, r1.lo * n2, T(0));
            std::fill(block + r1.hi * n2, block + rowLength, T(0));
          }
          // the columns outside the image, in the rows inside it (one strided pass per column;
          // a loop per row of 14 was most of the time): zeros, overwritten by the copy below
          // or not added
          const auto zero_column = [&](int64_t o2) {
            for (int64_t o1 = r1.lo; o1 < r1.hi; ++o1) block[o1 * n2 + o2] = T(0);
          };
          if constexpr (!ToCol) {
            for (int64_t o2 = 0; o2 < r2.lo; ++o2) zero_column(o2);
            for (int64_t o2 = r2.hi; o2 < n2; ++o2) zero_column(o2);
          }
          // positions [j0, j1) of the valid rows; the reads stay inside the plane, and any
          // position the clipping leaves out is an edge column
          const int64_t first = o0 * rowLength + r1.lo * n2, last = o0 * rowLength + r1.hi * n2;
          const int64_t j0 = std::max(first, -shift), j1 = std::min(last, S - shift);
          if constexpr (ToCol) {
            if (j1 > j0) std::copy(plane + j0 + shift, plane + j1 + shift, row + j0);
            for (int64_t o2 = 0; o2 < r2.lo; ++o2) zero_column(o2);
            for (int64_t o2 = r2.hi; o2 < n2; ++o2) zero_column(o2);
          } else if (j1 > j0) {
            T* to = plane + (j0 + shift);
            const T* from = row + j0;
            // rows and planes never overlap
#pragma omp simd
            for (int64_t j = 0; j < j1 - j0; ++j) to[j] += from[j];
          }
        }
      }
    }
  }
}

// Channels are independent (each owns its plane and rows): parallel when called outside a
// parallel region (batch 1) and the work is worth a team.
bool channels_in_parallel(int64_t channels, const ConvGeometry& g) {
  return channels > 1 && !in_parallel() && channels * g.kernelSpatial() * g.outSpatial() >= kMinThreadWork;
}

}  // namespace

template <class T>
void im2col(const T* im, T* col, int64_t channels, const ConvGeometry& g) {
  const int64_t S = g.inSpatial(), rows = g.kernelSpatial() * g.outSpatial();
  if (same_size_stride1(g)) {  // Note [Shifted runs]
#pragma omp parallel for schedule(static) if (channels_in_parallel(channels, g))
    for (int64_t c = 0; c < channels; ++c) unfold_plane_shifted<true, T>(im + c * S, col + c * rows, g);
    return;
  }
#pragma omp parallel for schedule(static) if (channels_in_parallel(channels, g))
  for (int64_t c = 0; c < channels; ++c) unfold_plane<true, T>(im + c * S, col + c * rows, g, 0, g.outSpatial());
}

template <class T>
void col2im(const T* col, T* im, int64_t channels, const ConvGeometry& g) {
  const int64_t S = g.inSpatial(), rows = g.kernelSpatial() * g.outSpatial();
#pragma omp parallel for schedule(static) if (channels_in_parallel(channels, g))
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(im + c * S, im + (c + 1) * S, T(0));
    unfold_plane<false, T>(im + c * S, col + c * rows, g, 0, g.outSpatial());
  }
}

namespace {
// col2im on scratch columns, which it may change (Note [Shifted runs]).
template <class T>
void fold_columns(T* col, T* im, int64_t channels, const ConvGeometry& g) {
  if (!same_size_stride1(g)) return col2im(col, im, channels, g);
  const int64_t S = g.inSpatial(), rows = g.kernelSpatial() * g.outSpatial();
#pragma omp parallel for schedule(static) if (channels_in_parallel(channels, g))
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(im + c * S, im + (c + 1) * S, T(0));
    unfold_plane_shifted<false, T>(im + c * S, col + c * rows, g);
  }
}

// The (sample, group) loop of the forward and backward-data passes, batch-parallel:
// body(grp, image, out, col) with the image-side and output-side planes of that sample's group
// and the thread's column buffer (null for a pointwise convolution, whose image is its own).
template <class Image, class Out, class T, class F>
void for_sample_groups(const ConvGeometry& g, Image* image, Out* out, T* workspace, F&& body) {
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups;
  const bool pointwise = g.pointwise();
  const int64_t colSize = pointwise ? 0 : g.colRows() * g.outSpatial();
  parallel_batch(g.batch, conv_threads(g), [&](int64_t n, int tid) {
    T* col = pointwise ? nullptr : workspace + tid * colSize;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      body(grp, image + (n * g.inC + grp * Cg) * g.inSpatial(), out + (n * g.outC + grp * Og) * g.outSpatial(), col);
    }
  });
}
}  // namespace

namespace {
// conv_forward by spatial tiles (Note [Spatial tiles]).
template <class T>
void conv_forward_tiled(const ConvGeometry& g, const Tiles& t, const T* x, const T* w, const T* bias, T* y,
                        T* workspace) {
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups, R = g.colRows(), P = g.outSpatial();
  const int64_t S = g.inSpatial(), K = g.kernelSpatial();
  // one tile of sample n, group grp, on the thread that owns workspace slot `slot`
  auto tile = [&](int64_t n, int64_t grp, int64_t i, int64_t slot) {
    const int64_t p0 = i * t.columns, p1 = std::min(P, p0 + t.columns), cols = p1 - p0;
    const T* xg = x + (n * g.inC + grp * Cg) * S;
    T* yg = y + (n * g.outC + grp * Og) * P + p0;
    T* col = workspace + slot * R * t.columns;
    for (int64_t c = 0; c < Cg; ++c) unfold_plane<true, T>(xg + c * S, col + c * K * cols, g, p0, p1);
    if (bias) {
      for (int64_t o = 0; o < Og; ++o) std::fill_n(yg + o * P, cols, bias[grp * Og + o]);
    }
    gemm<T>(false, false, Og, cols, R, T(1), w + grp * Og * R, R, col, cols, bias ? T(1) : T(0), yg, P);
  };
  if (conv_threads(g) > 1) {
    parallel_batch(g.batch, conv_threads(g), [&](int64_t n, int tid) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        for (int64_t i = 0; i < t.count; ++i) tile(n, grp, i, tid);
      }
    });
    return;
  }
  const int team = in_parallel() ? 1 : static_cast<int>(tile_threads(g, t));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      parallel_batch(t.count, team, [&](int64_t i, int tid) { tile(n, grp, i, tid); });
    }
  }
}
}  // namespace

template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y, T* workspace) {
  if (const Tiles t = forward_tiles(g); t.count > 0) return conv_forward_tiled(g, t, x, w, bias, y, workspace);
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups, R = g.colRows(), P = g.outSpatial();
  for_sample_groups(g, x, y, workspace, [&](int64_t grp, const T* xg, T* yg, T* col) {
    if (col) im2col(xg, col, Cg, g);
    if (bias) {
      // outside a parallel region (a sample at a time: batch 1) the team shares the fill, which
      // one thread took 8 % of ResNet-50's batch-1 forward doing while the other waited
#pragma omp parallel for schedule(static) if (!in_parallel() && Og * P > 32768)
      for (int64_t o = 0; o < Og; ++o) std::fill(yg + o * P, yg + (o + 1) * P, bias[grp * Og + o]);
    }
    gemm<T>(false, false, Og, P, R, T(1), w + grp * Og * R, R, col ? col : xg, P, bias ? T(1) : T(0), yg, P);
  });
}

template <class T>
void conv_backward_data(const ConvGeometry& g, const T* gy, const T* w, const T* bias, T* gx, T* workspace) {
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups, R = g.colRows();
  const int64_t S = g.inSpatial(), P = g.outSpatial();
  for_sample_groups(g, gx, gy, workspace, [&](int64_t grp, T* gxg, const T* gyg, T* col) {
    // col = W_g^T gy_g, then folded back onto the image
    gemm<T>(true, false, R, P, Og, T(1), w + grp * Og * R, R, gyg, P, T(0), col ? col : gxg, P);
    if (col) fold_columns(col, gxg, Cg, g);
    if (bias) {
      for (int64_t c = 0; c < Cg; ++c) {
        const T b = bias[grp * Cg + c];
        for (T *p = gxg + c * S, *e = p + S; p != e; ++p) *p += b;
      }
    }
  });
}

namespace {
// Note [Weight gradient past the image]
// The weight gradient is a product over im2col's columns, where the positions a window takes
// outside the image are zeros, so a NaN or Inf in gradOutput would meet them: 0 x NaN and
// 0 x Inf are NaN, and every weight-gradient entry of that output plane would be NaN. The sum
// the gradient stands for runs over the image's pixels only, and cuDNN's engines compute it so
// (an entry whose windows never reach a pixel at the non-finite position stays finite). A
// sample whose gradOutput plane holds a non-finite value therefore has that plane's rows of the
// gradient computed again as direct sums over the pixels inside (the rows as they were before
// the product are kept and put back first). Finite gradOutput takes the product alone, bit for
// bit as before; a convolution without padding has no zeros in its columns. A transposed
// convolution passes its input here as `gy`, so the same holds for a NaN in its input. One
// known exception on the GPU: the engine cuDNN 9.14 picks for a grouped, strided transposed
// convolution with adj does multiply the padding (tests/cudnn/test_ConvolutionFamily.cpp).
// A filter holding a NaN or Inf has no such answer to match: cuDNN's forward and backward-data
// engines (9.14, H200) disagree among themselves, some multiplying the zeros outside the image
// (every output of the plane NaN, as im2col's product here) and some skipping them, depending on
// the configuration; emulating either form left half the twin cases apart, so nn keeps its
// product and the twin tests do not put non-finite values into filters.
bool has_padding(const ConvGeometry& g) { return g.pad[0] != 0 || g.pad[1] != 0 || g.pad[2] != 0; }

template <class T>
bool all_finite(const T* p, int64_t n) {
  int wild = 0;
#pragma omp simd reduction(| : wild)
  for (int64_t i = 0; i < n; ++i) wild |= !(std::abs(p[i]) <= std::numeric_limits<T>::max());
  return wild == 0;
}

// sum over output positions p whose window's tap k falls inside the image of gyo[p] * xc[p + k]:
// one weight-gradient entry of one sample, for one output plane gyo and one input plane xc
template <class T>
T weight_sum_inside(const ConvGeometry& g, const T* xc, const T* gyo, int64_t k) {
  const int64_t tap[3] = {k / (g.k[1] * g.k[2]), k / g.k[2] % g.k[1], k % g.k[2]};
  int64_t off[3];
  Range r[3];
  for (int d = 0; d < 3; ++d) {
    off[d] = tap[d] * g.dilation[d] - g.pad[d];
    r[d] = valid_range(g.in[d], g.out[d], g.stride[d], off[d]);
  }
  T s = 0;
  for (int64_t o0 = r[0].lo; o0 < r[0].hi; ++o0) {
    for (int64_t o1 = r[1].lo; o1 < r[1].hi; ++o1) {
      const T* gyrow = gyo + (o0 * g.out[1] + o1) * g.out[2];
      const T* xrow = xc + ((o0 * g.stride[0] + off[0]) * g.in[1] + o1 * g.stride[1] + off[1]) * g.in[2] + off[2];
      for (int64_t o2 = r[2].lo; o2 < r[2].hi; ++o2) s += gyrow[o2] * xrow[o2 * g.stride[2]];
    }
  }
  return s;
}

// acc (Og x R) += alpha * gyg (Og x P) times the columns of xg: the product, with the rows of
// planes holding a non-finite value summed over the pixels inside (Note [Weight gradient past
// the image]).
template <class T>
void add_weight_product(const ConvGeometry& g, const T* xg, const T* col, const T* gyg, T alpha, T* acc) {
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups, R = g.colRows(), P = g.outSpatial();
  std::vector<int64_t> wild;
  if (has_padding(g)) {
    for (int64_t o = 0; o < Og; ++o) {
      if (!all_finite(gyg + o * P, P)) wild.push_back(o);
    }
  }
  std::vector<T> kept;
  for (const int64_t o : wild) kept.insert(kept.end(), acc + o * R, acc + (o + 1) * R);
  gemm<T>(false, true, Og, R, P, alpha, gyg, P, col, P, T(1), acc, R);
  const int64_t K = g.kernelSpatial(), S = g.inSpatial();
  for (size_t i = 0; i < wild.size(); ++i) {
    const int64_t o = wild[i];
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t k = 0; k < K; ++k) {
        const int64_t e = c * K + k;
        acc[o * R + e] = kept[i * R + e] + alpha * weight_sum_inside(g, xg + c * S, gyg + o * P, k);
      }
    }
  }
}
}  // namespace

template <class T>
void conv_backward_weight(const ConvGeometry& g, const T* x, const T* gy, T scale, T* gw, T* workspace) {
  const int64_t Cg = g.inC / g.groups, Og = g.outC / g.groups, R = g.colRows();
  const int64_t S = g.inSpatial(), P = g.outSpatial();
  const bool pointwise = g.pointwise();
  const int64_t colSize = pointwise ? 0 : R * P;
  const int threads = weight_threads(g);
  // Several threads sum into their own partial gradients, added in thread order at the end.
  const int64_t wSize = g.outC * R;
  T* partials = workspace + threads * colSize;
  if (threads > 1) std::fill(partials, partials + threads * wSize, T(0));
  parallel_batch(g.batch, threads, [&](int64_t n, int tid) {
    T* col = workspace + tid * colSize;
    T* acc = threads > 1 ? partials + tid * wSize : gw;
    const T alpha = threads > 1 ? T(1) : scale;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* xg = x + (n * g.inC + grp * Cg) * S;
      if (!pointwise) im2col(xg, col, Cg, g);
      add_weight_product(g, xg, pointwise ? xg : col, gy + (n * g.outC + grp * Og) * P, alpha, acc + grp * Og * R);
    }
  });
  if (threads > 1) reduce_partials(gw, partials, threads, wSize, scale);
}

template <class T>
void bias_backward(const T* g, int64_t batch, int64_t channels, int64_t spatial, T scale, T* gb) {
#pragma omp parallel for schedule(static) if (channels > 1 && batch * channels * spatial >= kMinThreadWork && !in_parallel())
  for (int64_t c = 0; c < channels; ++c) {
    double s = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* p = g + (n * channels + c) * spatial;
      // simd: one serial chain of double adds was 4 cycles an element (3.5 % of the fashion step)
      double plane = 0;
#pragma omp simd reduction(+ : plane)
      for (int64_t i = 0; i < spatial; ++i) plane += p[i];
      s += plane;
    }
    gb[c] += scale * static_cast<T>(s);
  }
}

#define NN_CONV_INSTANTIATE(T)                                                                          \
  template void im2col<T>(const T*, T*, int64_t, const ConvGeometry&);                                 \
  template void col2im<T>(const T*, T*, int64_t, const ConvGeometry&);                                 \
  template void conv_forward<T>(const ConvGeometry&, const T*, const T*, const T*, T*, T*);            \
  template void conv_backward_data<T>(const ConvGeometry&, const T*, const T*, const T*, T*, T*);      \
  template void conv_backward_weight<T>(const ConvGeometry&, const T*, const T*, T, T*, T*);           \
  template void bias_backward<T>(const T*, int64_t, int64_t, int64_t, T, T*);
NN_CONV_INSTANTIATE(float)
NN_CONV_INSTANTIATE(double)
#undef NN_CONV_INSTANTIATE

}  // namespace nn::kernels
