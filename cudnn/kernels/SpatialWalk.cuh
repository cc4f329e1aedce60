// SpatialWalk.cuh: the element a thread of the padding and up-sampling kernels owns: flat index
// e of a 3-d / 4-d tensor taken apart as (n, c, h, w) in the tensor's memory order, row-major or
// channels-last, so that consecutive threads write consecutive addresses.
#pragma once

#include <cstdint>

#include "nn/kernels/SpatialIndex.h"

namespace cudnn::kernels {

struct SpatialIndex4 {
  int64_t n, c, h, w;
};

__device__ inline SpatialIndex4 spatial_index(int64_t e, const nn::kernels::Planes& p, bool channelsLast) {
  SpatialIndex4 i;
  if (channelsLast) {
    i.c = e % p.c;
    e /= p.c;
    i.w = e % p.w;
    e /= p.w;
    i.h = e % p.h;
    i.n = e / p.h;
  } else {
    i.w = e % p.w;
    e /= p.w;
    i.h = e % p.h;
    e /= p.h;
    i.c = e % p.c;
    i.n = e / p.c;
  }
  return i;
}

// Whether to walk t channels-last: a 4-d tensor whose channels are its innermost dimension.
inline bool walks_channels_last(const nn::kernels::Planes& p) { return p.c > 1 && p.sc == 1 && p.sw == p.c; }

}  // namespace cudnn::kernels
