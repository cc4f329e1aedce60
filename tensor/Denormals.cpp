// Denormals.cpp
#include "tensor/Denormals.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tensor {

namespace {
#if defined(__SSE2__)
constexpr unsigned kFlushBits = 0x8000u | 0x0040u;  // MXCSR's FTZ (flush to zero) and DAZ (denormals are zero)

void set_on_this_thread(bool on) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kFlushBits) : (csr & ~kFlushBits));
}
#endif
}  // namespace

bool set_flush_denormal(bool on) {
#if defined(__SSE2__)
  set_on_this_thread(on);
#if defined(_OPENMP)
  // every thread of the team the kernels will use; each sets its own register
#pragma omp parallel num_threads(omp_get_max_threads())
  set_on_this_thread(on);
#endif
  return true;
#else
  (void)on;
  return false;
#endif
}

bool flush_denormal() {
#if defined(__SSE2__)
  return (_mm_getcsr() & kFlushBits) == kFlushBits;
#else
  return false;
#endif
}

}  // namespace tensor
