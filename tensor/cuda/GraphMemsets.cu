// GraphMemsets.cu: see GraphMemsets.h.
#include "tensor/cuda/GraphMemsets.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/cuda/CudaCheck.h"

namespace tensor::cuda {

// Note [Memset nodes in CUDA graphs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuDNN's persistent batch norms (and other calls) clear their counters with a memset on every
// call, about 150 in a ResNet-50 training step. Captured, each becomes a memset node, and
// between two kernels a memset node costs about 2.1 us of replay where a kernel node writing the
// same bytes costs 0.8 us (.data/memsetprobe.cu on an H100: 100 kernel-memset pairs 5.3-5.5 us a
// pair, kernel-kernel 4.1, kernel alone 3.3). So Graph::capture rewrites every memset node as a
// kernel node before instantiating: same bytes, same values, same edges; only memsets of up to
// 64 KiB (counters and flags; a large buffer is the driver's to clear). Graphs that hold
// stream-ordered allocation nodes are left as they are: CUDA refuses to remove a node's edges
// there (cudaGraphDestroyNode fails with cudaErrorNotSupported).

namespace {

constexpr int kThreads = 256;
// The largest memset rewritten: the kernel writes an element a thread, which beats the node's
// overhead on counters, not the driver's memset on large buffers.
constexpr size_t kMostBytes = 64 * 1024;

// The memset of `height` rows of `width` elements of `element_size` bytes (1, 2 or 4), rows
// `pitch` bytes apart, each element `value` (its low bytes).
__global__ void memset_node_kernel(char* dst, size_t pitch, unsigned value, unsigned element_size, size_t width,
                                   size_t height) {
  const size_t total = width * height;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    char* p = dst + (i / width) * pitch + (i % width) * element_size;
    if (element_size == 4)
      *reinterpret_cast<uint32_t*>(p) = value;
    else if (element_size == 2)
      *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(value);
    else
      *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(value);
  }
}

// The node's dependencies (incoming: true) or dependents, with their edges' data.
struct Edges {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> data;
};

Edges edges_of(cudaGraphNode_t node, bool incoming) {
  Edges e;
  size_t n = 0;
  if (incoming)
    CUDA_CHECK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n));
  else
    CUDA_CHECK(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &n));
  e.nodes.resize(n);
  e.data.resize(n);
  if (n == 0) return e;
  if (incoming)
    CUDA_CHECK(cudaGraphNodeGetDependencies(node, e.nodes.data(), e.data.data(), &n));
  else
    CUDA_CHECK(cudaGraphNodeGetDependentNodes(node, e.nodes.data(), e.data.data(), &n));
  return e;
}

}  // namespace

size_t memset_nodes_to_kernels(cudaGraph_t graph) {
  size_t n = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  std::vector<cudaGraphNodeType> types(n);
  for (size_t i = 0; i < n; ++i) {
    CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &types[i]));
    // a graph with stream-ordered allocations (a library's cudaMallocAsync under capture) may
    // not lose a node's dependencies: cudaGraphDestroyNode refuses, so it stays as it is
    if (types[i] == cudaGraphNodeTypeMemAlloc || types[i] == cudaGraphNodeTypeMemFree) return 0;
  }
  size_t replaced = 0;
  for (size_t i = 0; i < n; ++i) {
    if (types[i] != cudaGraphNodeTypeMemset) continue;
    cudaGraphNode_t node = nodes[i];
    cudaMemsetParams m{};
    CUDA_CHECK(cudaGraphMemsetNodeGetParams(node, &m));
    if (m.width * m.elementSize * std::max<size_t>(m.height, 1) > kMostBytes) continue;
    const Edges in = edges_of(node, true), out = edges_of(node, false);

    char* dst = static_cast<char*>(m.dst);
    size_t pitch = m.pitch, width = m.width, height = std::max<size_t>(m.height, 1);
    unsigned value = m.value, element_size = m.elementSize;
    void* args[] = {&dst, &pitch, &value, &element_size, &width, &height};
    cudaKernelNodeParams k{};
    k.func = reinterpret_cast<void*>(&memset_node_kernel);
    k.gridDim = dim3(static_cast<unsigned>(std::clamp<size_t>((width * height + kThreads - 1) / kThreads, 1, 1024)));
    k.blockDim = dim3(kThreads);
    k.kernelParams = args;
    cudaGraphNode_t kernel = nullptr;
    CUDA_CHECK(cudaGraphAddKernelNode(&kernel, graph, nullptr, 0, &k));
    if (!in.nodes.empty()) {
      const std::vector<cudaGraphNode_t> to(in.nodes.size(), kernel);
      CUDA_CHECK(cudaGraphAddDependencies(graph, in.nodes.data(), to.data(), in.data.data(), in.nodes.size()));
    }
    if (!out.nodes.empty()) {
      const std::vector<cudaGraphNode_t> from(out.nodes.size(), kernel);
      CUDA_CHECK(cudaGraphAddDependencies(graph, from.data(), out.nodes.data(), out.data.data(), out.nodes.size()));
    }
    CUDA_CHECK(cudaGraphDestroyNode(node));
    ++replaced;
  }
  return replaced;
}

}  // namespace tensor::cuda
