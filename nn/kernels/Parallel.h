// Parallel.h: the batch-parallel pattern of the CPU kernels. A batch is split over OpenMP
// threads; each thread gets its own slice of a caller-provided workspace (column buffers,
// partial gradient sums), so nothing allocates inside the loop. With one thread the loop runs
// outside any active parallel region, so the gemm inside can use Eigen's own threads.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace nn::kernels {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline bool in_parallel() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

// Threads for a batch of `batch` items of `work` multiply-adds each: one per item at most, and
// at least kMinThreadWork per thread, since opening a parallel region costs microseconds (much
// more on a loaded machine) and small layers, gradient checks' above all, are faster serial.
inline constexpr int64_t kMinThreadWork = int64_t{1} << 16;
inline int batch_threads(int64_t batch, int64_t work) {
  const int64_t by_work = batch * work / kMinThreadWork;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({batch, by_work, int64_t{max_threads()}})));
}

// Calls body(n, thread) for n in [0, count) on `threads` threads (static schedule, so the
// items a thread gets, and any per-thread sums, are the same from run to run).
template <class F>
void parallel_batch(int64_t count, int threads, F&& body) {
  if (threads <= 1) {
    for (int64_t n = 0; n < count; ++n) body(n, 0);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num();
#pragma omp for schedule(static)
    for (int64_t n = 0; n < count; ++n) body(n, tid);
  }
#else
  for (int64_t n = 0; n < count; ++n) body(n, 0);
#endif
}

// out[i] += scale * sum_t partials[t * size + i], summed in thread order (deterministic).
template <class T>
void reduce_partials(T* out, const T* partials, int threads, int64_t size, T scale) {
#pragma omp parallel for schedule(static) if (size > 32768 && !in_parallel())
  for (int64_t i = 0; i < size; ++i) {
    T s = 0;
    for (int t = 0; t < threads; ++t) s += partials[t * size + i];
    out[i] += scale * s;
  }
}

}  // namespace nn::kernels
