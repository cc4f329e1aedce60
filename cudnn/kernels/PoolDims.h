// PoolDims.h: the spatial dims of a pooling as our pooling kernels take them (PoolCeil.cu,
// PoolMaxBackward.cu): D, H, W, with 2-d pooling as 3-d of depth 1 and a window of 1.
#pragma once

#include "cudnn/kernels/Pool.h"

namespace cudnn::kernels {

// Sets g.in and g.out (the sizes of x's and y's spatial dims), g.k (window), g.s (stride) and
// g.p (padding) of a kernel's geometry from p; the kernels' Geometry structs differ in the rest.
template <class Geometry>
void set_pool_dims(Geometry& g, const Shape& x, const Shape& y, const PoolParams& p) {
  const int nd = static_cast<int>(p.ws.size());
  for (int d = 0; d < 3; ++d) {
    const int src = d - (3 - nd);  // 2-d pooling: depth 1 with a window of 1
    g.in[d] = src < 0 ? 1 : static_cast<int>(x[2 + src]);
    g.out[d] = src < 0 ? 1 : static_cast<int>(y[2 + src]);
    g.k[d] = src < 0 ? 1 : p.ws[src];
    g.s[d] = src < 0 ? 1 : (p.stride.empty() ? p.ws[src] : p.stride[src]);
    g.p[d] = src < 0 ? 0 : (p.pad.empty() ? 0 : p.pad[src]);
  }
}

}  // namespace cudnn::kernels
