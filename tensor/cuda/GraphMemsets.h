// GraphMemsets.h: a captured CUDA graph's memset nodes rewritten as kernel nodes (Note [Memset
// nodes in CUDA graphs] in GraphMemsets.cu). Internal to tensor/cuda/ and its tests.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tensor::cuda {

// Replaces every memset node of `graph` of up to 64 KiB by a kernel node that writes the same
// values to the same bytes, with the same dependencies and dependents (and their edges' data);
// none in a graph with allocation or free nodes. Returns how many it replaced; throws tensor::Error
// naming the call on a CUDA error.
size_t memset_nodes_to_kernels(cudaGraph_t graph);

}  // namespace tensor::cuda
