// test_PoolOps.cpp: cudnn::pool / pool_grad against Torch-semantics loops, floor and ceil
// mode (ceil shapes that add windows run on our own kernel), 2-D and 3-D, every mode.
#include <doctest/doctest.h>

#include "cudnn/core/Config.h"
#include "cudnn/ops/pool.h"
#include "tensor/Cuda.h"
#include "tests/support/OpReference.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

struct Case {
  Shape x;
  std::vector<int> k, s, p;
  bool ceil;
};

cudnn::PoolMode mode_of(reference::PoolSpec::Mode m) {
  switch (m) {
    case reference::PoolSpec::Max:
      return cudnn::PoolMode::Max;
    case reference::PoolSpec::AvgInc:
      return cudnn::PoolMode::AverageIncPad;
    case reference::PoolSpec::AvgExc:
      return cudnn::PoolMode::AverageExcPad;
    case reference::PoolSpec::Sum:
      return cudnn::PoolMode::Sum;
  }
  return cudnn::PoolMode::Max;
}
}  // namespace

TEST_CASE("pooling forward and backward match Torch's definition") {
  Generator gen(31);
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, false},
      {{1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1}, false},
      {{1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1}, true},  // ceil adds a column
      {{2, 2, 6, 6}, {3, 2}, {2, 2}, {0, 0}, true},  // ceil adds windows without padding
      {{1, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, true},  // the last ceil window would start in the right padding
      {{1, 2, 5, 6, 7}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, false},
      {{1, 2, 5, 6, 7}, {3, 2, 3}, {2, 2, 2}, {1, 0, 1}, true},
  };
  for (const Case& c : cases) {
    for (auto m : {reference::PoolSpec::Max, reference::PoolSpec::AvgInc, reference::PoolSpec::AvgExc,
                   reference::PoolSpec::Sum}) {
      for (DType dt : {DType::Float32, DType::Float64}) {
        INFO("x ", shape_str(c.x), " k ", c.k[0], " s ", c.s[0], " p ", c.p[0], c.ceil ? " ceil" : " floor", " mode ",
             static_cast<int>(m), " ", name(dt));
        reference::PoolSpec rs;
        rs.nd = static_cast<int>(c.k.size());
        rs.k = c.k;
        rs.s = c.s;
        rs.p = c.p;
        rs.mode = m;
        rs.ceil = c.ceil;
        cudnn::PoolParams p{c.k, c.s, c.p, mode_of(m), c.ceil};
        Tensor x = uniform(c.x, -1, 1, gen, dt);
        std::vector<int64_t> argmax;
        // Sum is the total of the window's elements (Theano: average_inc_pad times the window)
        const Tensor ref = reference::pool(x, rs, &argmax);
        const Tensor y = cudnn::pool(x.to(gpu), p);
        REQUIRE(y.sizes() == ref.sizes());
        CHECK(max_abs_diff(y, ref) < (dt == DType::Float64 ? 1e-12 : 1e-5));
        // gradient: linear in dy, so the adjoint identity <pool'(dy), v> = <dy, pool'^T v> would
        // need the transpose; compare with the scatter definition instead.
        const Tensor dy = uniform(ref.sizes(), -1, 1, gen, dt);
        const Tensor dx = cudnn::pool_grad(x.to(gpu), y, dy.to(gpu), p);
        if (m == reference::PoolSpec::Max) {
          Tensor want = zeros(c.x, DType::Float64);
          const int64_t planes = c.x[0] * c.x[1], osz = ref.numel() / planes, isz = x.numel() / planes;
          Tensor flat = want.view({planes, isz});
          const auto g = dy.to_vector<double>();
          for (int64_t pl = 0; pl < planes; ++pl)
            for (int64_t o = 0; o < osz; ++o) {
              const int64_t a = argmax[static_cast<size_t>(pl * osz + o)];
              flat.set({pl, a}, flat.get({pl, a}) + g[static_cast<size_t>(pl * osz + o)]);
            }
          CHECK(max_abs_diff(dx, want) < (dt == DType::Float64 ? 1e-12 : 1e-5));
        } else {
          // average/sum pooling is linear in x: check the adjoint identity <pool(x), dy> = <x, dx>
          Tensor v = uniform(c.x, -1, 1, gen, dt);
          const Tensor pv = cudnn::pool(v.to(gpu), p);
          CHECK(reference::dot(pv, dy) == doctest::Approx(reference::dot(v, dx)).epsilon(1e-5));
        }
      }
    }
  }
}

TEST_CASE("pool argument errors and deterministic max pooling") {
  Generator gen(2);
  Tensor x = uniform({1, 1, 4, 4}, -1, 1, gen, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(cudnn::pool(x, cudnn::PoolParams{{5, 5}, {}, {}, cudnn::PoolMode::Max, false}),
                       doctest::Contains("too small"), Error);
  CHECK_THROWS_WITH_AS(cudnn::pool(x, cudnn::PoolParams{{2, 2}, {}, {2, 2}, cudnn::PoolMode::Max, false}),
                       doctest::Contains("at most half the window"), Error);
  cudnn::ScopedConfig flags("deterministic=true");
  Tensor big = uniform({8, 16, 33, 33}, -1, 1, gen, DType::Float32, gpu).mul(0.0).add(1.0);  // all ties
  cudnn::PoolParams p{{3, 3}, {2, 2}, {1, 1}, cudnn::PoolMode::Max, false};
  const Tensor y = cudnn::pool(big, p);
  const Tensor dy = uniform(y.sizes(), -1, 1, gen, DType::Float32, gpu);
  CHECK(max_abs_diff(cudnn::pool_grad(big, y, dy, p), cudnn::pool_grad(big, y, dy, p)) == 0);
}

TEST_CASE("channels-last max pooling gradient through PoolPlan: every dtype, ties, no output read") {
  // Torch's first maximum takes a tie's gradient (Note [Channels-last max-pooling backward]);
  // values on a coarse grid tie in most windows. y is undefined: only our kernel runs without it
  // (under auto as well, for channels-last data).
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
  Generator gen(32);
  const std::vector<Case> cases = {
      {{2, 16, 8, 8}, {2, 2}, {2, 2}, {0, 0}, false},
      {{2, 6, 7, 9}, {2, 2}, {2, 2}, {0, 0}, false},  // odd sizes: the last row and column take no gradient
      {{1, 8, 7, 9}, {3, 3}, {2, 2}, {1, 1}, false},
      {{1, 8, 7, 9}, {3, 3}, {2, 2}, {1, 1}, true},
      {{2, 4, 13, 13}, {3, 3}, {2, 2}, {0, 0}, false},
      {{1, 5, 5, 5}, {2, 2}, {2, 2}, {1, 1}, true},
      {{1, 8, 9, 9}, {1, 1}, {3, 2}, {0, 0}, false},     // windows smaller than the stride leave gaps
      {{1, 4, 23, 21}, {17, 16}, {3, 2}, {8, 8}, true},  // 272 elements: int32 offsets in the two passes
      {{1, 4, 5, 6, 7}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, false},
      {{1, 4, 5, 6, 7}, {3, 2, 3}, {2, 2, 2}, {1, 0, 1}, true},
  };
  for (const Case& c : cases) {
    for (DType dt : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
      INFO("x ", shape_str(c.x), " k ", c.k[0], " s ", c.s[0], " p ", c.p[0], c.ceil ? " ceil " : " floor ", name(dt));
      reference::PoolSpec rs;
      rs.nd = static_cast<int>(c.k.size());
      rs.k = c.k;
      rs.s = c.s;
      rs.p = c.p;
      rs.ceil = c.ceil;
      const Tensor x = uniform(c.x, -2, 2, gen, DType::Float64).round();
      std::vector<int64_t> argmax;
      const Tensor ref = reference::pool(x, rs, &argmax);
      const Tensor dy = uniform(ref.sizes(), -4, 4, gen, DType::Float64).mul(8.0).round().mul(0.125);
      Tensor want = zeros(c.x, DType::Float64);
      const int64_t planes = c.x[0] * c.x[1], osz = ref.numel() / planes, isz = x.numel() / planes;
      Tensor flat = want.view({planes, isz});
      const auto g = dy.to_vector<double>();
      for (int64_t pl = 0; pl < planes; ++pl)
        for (int64_t o = 0; o < osz; ++o) {
          const int64_t a = argmax[static_cast<size_t>(pl * osz + o)];
          flat.set({pl, a}, flat.get({pl, a}) + g[static_cast<size_t>(pl * osz + o)]);
        }
      const auto cl = MemoryFormat::ChannelsLast;
      const Tensor xg = x.to(gpu, dt).contiguous(cl), dyg = dy.to(gpu, dt).contiguous(cl);
      const Tensor dx = empty(c.x, dt, gpu, cl);
      cudnn::PoolParams p{c.k, c.s, c.p, cudnn::PoolMode::Max, c.ceil};
      REQUIRE_FALSE(cudnn::PoolPlan::backward_reads_output(xg, p));
      cudnn::PoolPlan().backward(xg, Tensor(), dyg, dx, p);
      CHECK(max_abs_diff(dx.to(Device::cpu(), DType::Float64), want) == 0);
    }
  }
}

TEST_CASE("pool.backward=ours, overlapping windows: the two passes in a CUDA graph replay as the eager call") {
  // the offsets' scratch is leased inside the capture (the graph's pool): each replay with new
  // x and dy must give the eager gradient
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
  Generator gen(34);
  const auto cl = MemoryFormat::ChannelsLast;
  const cudnn::PoolParams p{{3, 3}, {2, 2}, {1, 1}, cudnn::PoolMode::Max, false};
  Tensor x = empty({4, 16, 28, 28}, DType::Float16, gpu, cl), dy = empty({4, 16, 14, 14}, DType::Float16, gpu, cl);
  Tensor dx = empty(x.sizes(), x.dtype(), gpu, cl), want = empty(x.sizes(), x.dtype(), gpu, cl);
  x.copy_(uniform(x.sizes(), -2, 2, gen).round());
  dy.copy_(uniform(dy.sizes(), -1, 1, gen));
  cudnn::PoolPlan plan;
  plan.backward(x, Tensor(), dy, dx, p);
  const cuda::Graph graph = cuda::Graph::capture([&] { plan.backward(x, Tensor(), dy, dx, p); });
  for (int replay = 0; replay < 2; ++replay) {
    x.copy_(uniform(x.sizes(), -2, 2, gen).round());                        // ties
    dy.copy_(uniform(dy.sizes(), -4, 4, gen).mul(8.0).round().mul(0.125));  // sums exact in float16
    graph.replay();
    cudnn::PoolPlan().backward(x, Tensor(), dy, want, p);
    CHECK(max_abs_diff(dx, want) == 0);
    CHECK(dx.to(DType::Float32).sum().item() == dy.to(DType::Float32).sum().item());  // every dy lands once
  }
}
