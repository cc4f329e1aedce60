// BlockFold.cuh: the fixed-order tree reduction in shared memory that the deterministic
// kernels share (the multi-tensor norms; the cudnn backend's batch norm, NLL, bias and
// attention sums). Each thread of a block of kThreads has written its value(s) to slot
// threadIdx.x of shared arrays; block_fold folds slot i + stride into slot i for stride =
// kThreads / 2, ..., 1, so slot 0 ends with the block's result, combined in the same order
// (and so with the same bits) on every run. Include only from .cu files.
#pragma once

namespace tensor::cuda {

// fold(i, j) folds slot j into slot i of every array the caller reduces. Every thread of the
// block calls it (it holds barriers); the slots written before the call are visible to it,
// and slot 0 may be read by all after it.
template <int kThreads, class Fold>
__device__ void block_fold(Fold fold) {
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) fold(threadIdx.x, threadIdx.x + stride);
    __syncthreads();
  }
}

}  // namespace tensor::cuda
