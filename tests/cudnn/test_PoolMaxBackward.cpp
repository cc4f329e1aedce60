// test_PoolMaxBackward.cpp: the per-thread rule of the channels-last max-pooling gradient
// (cudnn/kernels/PoolMaxBackward.h, Note [Channels-last max-pooling backward]) run on the CPU,
// one thread after another, against nn's max-pooling kernels on random configurations (2-d and
// 3-d, padding, floor and ceil sizes, windows smaller than, equal to and larger than the
// stride; the two passes of overlapping windows with byte and int32 offsets), inputs with ties,
// NaN and +-Inf, in all four dtypes and every vector width: the gradient must be nn's bit for bit. The GPU twin tests
// (test_PoolingFamily, test_PoolOps) check the kernels themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cudnn/Config.h"
#include "cudnn/kernels/PoolMaxBackward.h"
#include "cudnn/ops/pool.h"
#include "nn/kernels/Pooling.h"

namespace {

namespace cl = cudnn::kernels::max_pool_cl;
using Dims = std::array<int, 3>;

struct Config {
  int n, c;
  Dims in, k, s, p;
  bool ceil;
  std::string str() const {
    auto d = [](const Dims& v) {
      return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
    };
    return "N " + std::to_string(n) + " C " + std::to_string(c) + " in " + d(in) + " k " + d(k) + " s " + d(s) + " p " +
           d(p) + (ceil ? " ceil" : " floor");
  }
};

// Runs every thread of the scheme the kernels pick (the two passes' scratch of offsets in I),
// the scratch starting as garbage as a leased block does; Idx is the threads' index type (the
// kernels take int32 where the tensors allow it).
template <class T, class I, int V, class Idx>
void run_threads(const cl::Geometry& g, const T* x, const T* dy, T* dx) {
  const Idx n = static_cast<Idx>(cl::threads(g, V)), outputs = static_cast<Idx>(cl::argmax_threads(g, V));
  if (!cl::overlapping(g)) {
    for (Idx i = 0; i < n; ++i) cl::cell_thread<T, V, Idx>(g, i, x, dy, dx);
    return;
  }
  // packs, so that the block is aligned as the kernels' accesses (and the allocator's blocks) are
  std::vector<cl::Pack<I, V>> packs(static_cast<size_t>(cl::argmax_threads(g, V)));
  I* arg = packs.front().v;
  std::fill(arg, arg + packs.size() * V, I(77));
  for (Idx i = 0; i < outputs; ++i) cl::argmax_thread<T, I, V, Idx>(g, i, x, arg);
  for (Idx i = 0; i < n; ++i) cl::gather_thread<T, I, V, Idx>(g, i, arg, dy, dx);
}

// The offset type the kernels pick, or int32 where `wide` asks for it.
template <class T, int V, class Idx>
void run_threads(const cl::Geometry& g, const T* x, const T* dy, T* dx, bool wide) {
  if (cl::byte_offsets(g) && !wide)
    run_threads<T, uint8_t, V, Idx>(g, x, dy, dx);
  else
    run_threads<T, int32_t, V, Idx>(g, x, dy, dx);
}

// nn's gradient (float32 or float64 references; 16-bit data through float32, rounded once
// at the end as the kernels' float accumulation is) against the rule's, on channels-last copies.
template <class T, int V>
bool matches_nn(const Config& cf, std::mt19937& rng, bool nonfinite, bool wide = false) {
  using R = std::conditional_t<sizeof(T) == 8, double, float>;
  cl::Geometry g{};
  nn::kernels::PoolGeometry ng;
  g.batch = cf.n;
  g.channels = cf.c;
  ng.planes = int64_t(cf.n) * cf.c;
  for (int d = 0; d < 3; ++d) {
    g.in[d] = cf.in[d];
    g.k[d] = cf.k[d];
    g.s[d] = cf.s[d];
    g.p[d] = cf.p[d];
    g.out[d] = static_cast<int>(nn::kernels::pool_output_size(cf.in[d], cf.k[d], cf.s[d], cf.p[d], cf.ceil));
    ng.in[d] = g.in[d];
    ng.out[d] = g.out[d];
    ng.k[d] = g.k[d];
    ng.d[d] = g.s[d];
    ng.pad[d] = g.p[d];
  }
  const int64_t ip = cl::in_plane(g), op = cl::out_plane(g), planes = ng.planes;
  std::vector<R> x(planes * ip), dy(planes * op), y(planes * op), dx(planes * ip);
  std::vector<int64_t> idx(planes * op);
  std::uniform_int_distribution<int> value(-2, 2), special(0, 11), grad(-32, 32);
  for (R& v : x) {  // a coarse grid: ties in most windows
    v = R(value(rng));
    const int s = nonfinite ? special(rng) : 3;
    if (s == 0) v = NAN;
    if (s == 1) v = INFINITY;
    if (s == 2) v = -INFINITY;
  }
  for (R& v : dy) v = R(grad(rng)) / R(8);
  nn::kernels::max_pool_forward<R>(ng, x.data(), y.data(), idx.data());
  nn::kernels::max_pool_backward<R>(ng, dy.data(), idx.data(), dx.data());

  std::vector<T> xc(x.size()), dyc(dy.size()), dxc(dx.size(), T(123.0f));  // N (D) H W C
  for (int64_t pl = 0; pl < planes; ++pl) {
    const int64_t n = pl / cf.c, c = pl % cf.c;
    for (int64_t i = 0; i < ip; ++i) xc[(n * ip + i) * cf.c + c] = T(x[pl * ip + i]);
    for (int64_t o = 0; o < op; ++o) dyc[(n * op + o) * cf.c + c] = T(dy[pl * op + o]);
  }
  std::vector<T> dx32(dxc);
  run_threads<T, V, int64_t>(g, xc.data(), dyc.data(), dxc.data(), wide);
  run_threads<T, V, int32_t>(g, xc.data(), dyc.data(), dx32.data(), wide);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const int64_t n = pl / cf.c, c = pl % cf.c;
    for (int64_t i = 0; i < ip; ++i) {
      const int64_t at = (n * ip + i) * cf.c + c;
      const R want = R(T(dx[pl * ip + i]));
      for (const auto* indices : {&dxc, &dx32}) {
        const R got = R((*indices)[at]);
        if (got == want) continue;
        INFO(cf.str(), " V ", V, nonfinite ? " with NaN and +-Inf" : "", indices == &dx32 ? " (32-bit indices)" : "",
             ": element ", i, " of plane ", pl, " is ", double(got), ", nn's ", double(want));
        CHECK(got == want);
        return false;
      }
    }
  }
  return true;
}

// Random configurations Torch accepts (pad <= kernel / 2, at least one window per dim).
Config random_config(std::mt19937& rng, bool three_d, int channels) {
  std::uniform_int_distribution<int> size(1, 11), kernel(1, 4), stride(1, 4);
  Config cf{2, channels, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, rng() % 2 == 0};
  for (int d = three_d ? 0 : 1; d < 3; ++d) {
    cf.k[d] = kernel(rng);
    cf.s[d] = stride(rng);
    cf.p[d] = std::uniform_int_distribution<int>(0, cf.k[d] / 2)(rng);
    cf.in[d] = std::max(size(rng), cf.k[d] - 2 * cf.p[d]);
  }
  return cf;
}

template <class T, int V>
void check_random(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  int failures = 0;
  for (int i = 0; i < count && failures < 3; ++i) {
    const Config cf = random_config(rng, i % 3 == 0, V * (i % 2 + 1));
    failures += !matches_nn<T, V>(cf, rng, i % 2 == 0, i % 5 == 4);
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("channels-last max-pooling gradient rule: nn's exactly, random configurations, ties, NaN and +-Inf") {
  check_random<float, 1>(300, 1);
  check_random<float, 4>(300, 2);
  check_random<double, 2>(300, 3);
  check_random<tensor::Half, 8>(200, 4);
  check_random<tensor::BFloat16, 8>(200, 5);
  check_random<tensor::BFloat16, 1>(100, 6);
}

TEST_CASE("channels-last max-pooling gradient rule at the networks' windows") {
  std::mt19937 rng(7);
  for (bool nonfinite : {false, true}) {
    CHECK(matches_nn<float, 4>({2, 16, {1, 28, 28}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}, false}, rng, nonfinite));  // VGG
    CHECK(
        matches_nn<float, 4>({2, 16, {1, 27, 27}, {1, 3, 3}, {1, 2, 2}, {0, 0, 0}, false}, rng, nonfinite));  // AlexNet
    CHECK(
        matches_nn<float, 4>({2, 16, {1, 28, 28}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, false}, rng, nonfinite));  // ResNet
  }
}

TEST_CASE("channels-last max-pooling gradient rule: windows of more than 256 elements keep int32 offsets") {
  std::mt19937 rng(8);
  const Config big{2, 4, {1, 23, 21}, {1, 17, 16}, {1, 3, 2}, {0, 8, 8}, true};  // 272 elements
  const Config big3d{1, 2, {9, 10, 9}, {7, 7, 6}, {2, 3, 1}, {3, 0, 3}, false};  // 294
  for (bool nonfinite : {false, true}) {
    CHECK(matches_nn<float, 4>(big, rng, nonfinite));
    CHECK(matches_nn<tensor::Half, 2>(big3d, rng, nonfinite));
  }
  cl::Geometry g{};
  g.k[0] = 1, g.k[1] = 16, g.k[2] = 16;
  CHECK(cl::byte_offsets(g));
  g.k[2] = 17;
  CHECK_FALSE(cl::byte_offsets(g));
}

TEST_CASE("the flag pool.backward: auto, ours, cudnn in config(), restored by ScopedConfig; others refused") {
  CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Auto);
  {
    const cudnn::ScopedConfig scoped("pool.backward=ours");
    CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Ours);
    CHECK(cudnn::pool_backward() == cudnn::PoolBackward::Ours);  // what ops/pool.h reads is config()'s
    cudnn::set_flags("pool.backward=cudnn");
    CHECK(cudnn::pool_backward() == cudnn::PoolBackward::Cudnn);
    cudnn::set_flags("pool.backward=auto");
    CHECK(cudnn::pool_backward() == cudnn::PoolBackward::Auto);
    cudnn::set_flags("pool.backward=cudnn");
  }
  CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Auto);
  {
    const cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
    CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Ours);
  }
  CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Auto);
  CHECK_THROWS_WITH_AS(cudnn::set_flags("pool.backward=fast"),
                       "cudnn flags: pool.backward expects auto, ours or cudnn, got 'fast'", tensor::Error);
  CHECK(cudnn::config().pool_backward == cudnn::PoolBackward::Auto);
}
