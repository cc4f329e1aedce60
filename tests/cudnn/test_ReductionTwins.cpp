// test_ReductionTwins.cpp: the twins of the reductions (cudnn.Sum, Mean, Max, Min), of
// cudnn.Normalize and of cudnn.PReLU against their nn modules, as one table: float32 (TF32
// off), float64, float16 and bfloat16, contiguous and not; NaN and +-Inf in the input and in
// gradOutput; an empty batch; the convert round trip. Then the cases the table cannot show:
// ties and NaN give the first index on the GPU too (both kernel shapes: a thread per output
// and a block per output), long rows, Normalize's p = inf argmax, PReLU's weight gradient
// bit for bit from run to run, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudnn/Max.h"
#include "cudnn/Mean.h"
#include "cudnn/Min.h"
#include "cudnn/Normalize.h"
#include "cudnn/PReLU.h"
#include "cudnn/Sum.h"
#include "cudnn/core/Config.h"
#include "nn/Max.h"
#include "nn/Mean.h"
#include "nn/Min.h"
#include "nn/Normalize.h"
#include "nn/PReLU.h"
#include "nn/Sum.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

const double kInfinity = std::numeric_limits<double>::infinity();

struct Row {
  std::string name;
  std::function<nn::ModulePtr()> nn, cu;
  Shape input;  // batch first
  // >= 0 where each output's gradient goes to one input entry picked along this dimension (Max,
  // Min, Normalize(inf)): Note [Distinct exact inputs for the argmax rows]
  int64_t pickDim = -1;
};

// `r`, its outputs picking an entry along `dim`
Row picking(Row r, int64_t dim) {
  r.pickDim = dim;
  return r;
}

// Note [Distinct exact inputs for the argmax rows]
// Max, Min and Normalize(inf) send each output's gradient to one input entry: the maximum or
// minimum of its fibre (of |x| for Normalize). nn picks it on the input as drawn (float64), the
// twin on the input rounded to its dtype (testkit/TwinCheck.h). In float16 and bfloat16 rounding
// ties close values or swaps them: 700 uniform values in [-2, 2] hold many bfloat16 duplicates
// (8 significant bits: 128 values a binade), so the twin picks another entry and a whole
// gradOutput entry lands elsewhere. In those dtypes these rows take values exact in both 16-bit
// dtypes with distinct magnitudes along the picked dimension: a random choice, per fibre, of the
// 896 magnitudes (1 + k/128) 2^e, k in [0, 128), e in [-6, 0] (8 significant bits, within
// [1/64, 2)), each with a random sign. Rounding then changes nothing and nothing ties (ties have
// their own case below). float32 and float64 keep the uniform draws, from the same stream.
Tensor distinct_exact_input(const Shape& shape, int64_t dim, Generator& gen) {
  constexpr int64_t kMantissas = 128, kBinades = 7;
  std::vector<double> pool;
  for (int64_t e = 0; e < kBinades; ++e) {
    for (int64_t k = 0; k < kMantissas; ++k)
      pool.push_back(std::ldexp(1.0 + static_cast<double>(k) / kMantissas, static_cast<int>(-e)));
  }
  const int64_t n = shape.at(static_cast<size_t>(dim));
  REQUIRE(n <= static_cast<int64_t>(pool.size()));
  // the values in the order [the other dimensions..., dim], then permuted back
  std::vector<int64_t> order, inverse(shape.size());
  Shape moved;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d != dim) order.push_back(d);
  }
  order.push_back(dim);
  for (size_t i = 0; i < order.size(); ++i) {
    moved.push_back(shape[static_cast<size_t>(order[i])]);
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  }
  std::vector<double> v;
  for (int64_t f = 0; f < shape_numel(shape) / n; ++f) {
    std::vector<double> p = pool;
    for (int64_t i = 0; i < n; ++i) {  // a partial Fisher-Yates shuffle
      std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(i + gen.randint(static_cast<int64_t>(p.size()) - i))]);
      v.push_back(gen.uniform() < 0.5 ? -p[static_cast<size_t>(i)] : p[static_cast<size_t>(i)]);
    }
  }
  return from_vector<double>(v, moved).permute(inverse).contiguous();
}

template <class N, class C, class... A>
Row row(std::string name, Shape input, A... args) {
  return {std::move(name), [=] { return nn::ModulePtr(std::make_shared<N>(args...)); },
          [=] { return nn::ModulePtr(std::make_shared<C>(args...)); }, std::move(input)};
}

// PReLU with distinct per-channel weights (the same on both sides)
Row prelu_row(std::string name, Shape input, int64_t planes) {
  auto weights = [planes](nn::PReLU& m) {
    if (planes > 0) m.weight.copy_(arange(1, static_cast<double>(planes) + 1, 1).mul(0.1).view({planes}));
  };
  return {std::move(name),
          [=] {
            auto m = std::make_shared<nn::PReLU>(planes);
            weights(*m);
            return nn::ModulePtr(m);
          },
          [=] {
            auto m = std::make_shared<cudnn::PReLU>(planes);
            weights(*m);
            return nn::ModulePtr(m);
          },
          std::move(input)};
}

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      row<nn::Sum, cudnn::Sum>("Sum(1)", {3, 5, 4}, int64_t{1}),
      row<nn::Sum, cudnn::Sum>("Sum(-1, sizeAverage)", {3, 5, 4}, int64_t{-1}, true),
      row<nn::Sum, cudnn::Sum>("Sum(1) over 300", {2, 300}, int64_t{1}),  // a block per output
      row<nn::Mean, cudnn::Mean>("Mean(0)", {3, 5, 4}, int64_t{0}),
      row<nn::Mean, cudnn::Mean>("Mean(2)", {3, 5, 4}, int64_t{2}),
      picking(row<nn::Max, cudnn::Max>("Max(1)", {3, 5, 4}, int64_t{1}), 1),
      picking(row<nn::Max, cudnn::Max>("Max(-1) over 700", {3, 700}, int64_t{-1}), 1),
      picking(row<nn::Min, cudnn::Min>("Min(2)", {3, 5, 4}, int64_t{2}), 2),
      picking(row<nn::Min, cudnn::Min>("Min(1) over 300", {2, 300}, int64_t{1}), 1),
      row<nn::Normalize, cudnn::Normalize>("Normalize(2)", {4, 7}, 2.0, 1e-10),
      row<nn::Normalize, cudnn::Normalize>("Normalize(1)", {4, 7}, 1.0, 1e-10),
      row<nn::Normalize, cudnn::Normalize>("Normalize(3)", {4, 300}, 3.0, 1e-10),
      row<nn::Normalize, cudnn::Normalize>("Normalize(1.5)", {4, 7}, 1.5, 1e-10),
      picking(row<nn::Normalize, cudnn::Normalize>("Normalize(inf)", {4, 700}, kInfinity, 1e-10), 1),
      prelu_row("PReLU()", {3, 4, 5}, 0),
      prelu_row("PReLU(4)", {3, 4, 5}, 4),
      prelu_row("PReLU(4), 4-d", {2, 4, 3, 3}, 4),
  };
  return r;
}

}  // namespace

TEST_CASE("reduction, Normalize and PReLU twins match nn in float32 (TF32 off), float64, float16 and bfloat16") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(71), exact(75);
  for (const Row& r : rows()) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool noncontiguous : {false, true}) {
        INFO(r.name, " ", std::string(name(dt)), noncontiguous ? ", non-contiguous" : "");
        nn::ModulePtr ref = r.nn(), twin = r.cu();
        const Tensor drawn = uniform(r.input, -2, 2, gen, DType::Float64);
        const bool sixteen = dt == DType::Float16 || dt == DType::BFloat16;
        // Note [Distinct exact inputs for the argmax rows]
        const Tensor x = r.pickDim >= 0 && sixteen ? distinct_exact_input(r.input, r.pickDim, exact) : drawn;
        expect_twin_matches(*ref, *twin, x, dt, TwinTolerance::for_dtype(dt), noncontiguous);
      }
    }
  }
}

TEST_CASE("reduction, Normalize and PReLU twins: NaN and +-Inf in the input and gradOutput give nn's values") {
  Generator gen(72);
  for (const Row& r : rows()) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      INFO(r.name, " ", std::string(name(dt)));
      nn::ModulePtr ref = r.nn(), twin = r.cu();
      expect_twin_nonfinite_matches(*ref, *twin, uniform(r.input, -2, 2, gen, DType::Float64), {}, dt,
                                    TwinTolerance::for_dtype(dt));
      nn::ModulePtr ref2 = r.nn(), twin2 = r.cu();
      expect_twin_nonfinite_gradient_matches(*ref2, *twin2, uniform(r.input, -2, 2, gen, DType::Float64), {}, dt,
                                             TwinTolerance::for_dtype(dt));
    }
  }
}

TEST_CASE("reduction, Normalize and PReLU twins: empty batches and the convert round trip") {
  const Device gpu = Device::cuda(0);
  Generator gen(73);
  for (const Row& r : rows()) {
    INFO(r.name);
    nn::ModulePtr ref = r.nn(), twin = r.cu();
    twin->to(gpu);
    Shape empty = r.input;
    empty[0] = 0;
    const Tensor x = zeros(empty);
    const Tensor y = ref->forward(x);
    CHECK(shape_str(twin->forward(x.to(gpu)).sizes()) == shape_str(y.sizes()));
    CHECK(shape_str(twin->backward(x.to(gpu), zeros(y.sizes(), DType::Float32, gpu)).sizes()) == shape_str(empty));
    for (const Tensor& g : twin->gradParameters()) CHECK(max_abs_diff(g.cpu(), zeros(g.sizes())) == 0);
    expect_convert_roundtrip(r.nn(), uniform(r.input, -2, 2, gen));
  }
}

TEST_CASE("cudnn.Max and Min: ties and NaN go to the first index, a thread or a block per output") {
  const Device gpu = Device::cuda(0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t n : {5, 600}) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      INFO("n = ", n, " ", std::string(name(dt)));
      // row 0: ties of the maximum (3) at 1 and n - 1 and of the minimum (-3) at 2 and n - 2;
      // row 1: NaN at 3 and n - 1
      std::vector<double> v(static_cast<size_t>(2 * n), 0.5);
      v[1] = v[n - 1] = 3;
      v[2] = v[n - 2] = -3;
      v[n + 3] = v[2 * n - 1] = nan;
      const Tensor x = from_vector<double>(v, {2, n}).to(gpu, dt);
      cudnn::Max mx(1);
      cudnn::Min mn(1);
      mx.to(gpu);
      mn.to(gpu);
      mx.to(dt);
      mn.to(dt);
      mx.forward(x);
      mn.forward(x);
      CHECK(mx.indices.cpu().to_vector<int64_t>() == std::vector<int64_t>{1, 3});
      CHECK(mn.indices.cpu().to_vector<int64_t>() == std::vector<int64_t>{2, 3});
      const Tensor gi = mx.backward(x, ones({2}, dt, gpu)).cpu().to(DType::Float64);
      CHECK(gi.sum().item() == 2);
      CHECK(gi.get({0, 1}) == 1);
      CHECK(gi.get({1, 3}) == 1);
    }
  }
}

TEST_CASE("cudnn.PReLU: the weight gradient is the same bits on every run, accumulated with scale") {
  const Device gpu = Device::cuda(0);
  Generator gen(74);
  cudnn::PReLU m(3);
  m.to(gpu);
  const Tensor x = uniform({64, 3, 50}, -2, 2, gen).to(gpu), g = uniform({64, 3, 50}, -1, 1, gen).to(gpu);
  m.forward(x);
  m.zeroGradParameters();
  m.backward(x, g, 0.5);
  const Tensor first = m.gradWeight.cpu();
  for (int i = 0; i < 3; ++i) {
    m.zeroGradParameters();
    m.backward(x, g, 0.5);
    CHECK(max_abs_diff(m.gradWeight.cpu(), first) == 0);
  }
  nn::PReLU ref(3);
  ref.forward(x.cpu());
  ref.zeroGradParameters();
  ref.backward(x.cpu(), g.cpu(), 0.5);
  CHECK(max_rel_error(first, ref.gradWeight) < 1e-5);
}

TEST_CASE("reduction, Normalize and PReLU twins: printing and errors name the twin") {
  CHECK(cudnn::Sum(1).str() == "cudnn.Sum");
  CHECK(cudnn::Max(0).str() == "cudnn.Max");
  CHECK(cudnn::Normalize(kInfinity).str() == "cudnn.Normalize(inf)");
  CHECK(cudnn::PReLU(2).str() == "cudnn.PReLU");
  const Device gpu = Device::cuda(0);
  cudnn::Max mx(1);
  mx.to(gpu);
  CHECK_THROWS_WITH_AS(mx.forward(zeros({2, 3})),
                       doctest::Contains("cudnn.Max::updateOutput: expected input on a CUDA "
                                         "device"),
                       Error);
  CHECK_THROWS_WITH_AS(mx.forward(zeros({2, 0}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.Max::updateOutput: expected a non-empty dimension 1"), Error);
  CHECK_THROWS_WITH_AS(mx.forward(zeros({2, 3}, DType::Int64, gpu)), doctest::Contains("cudnn.Max::updateOutput"),
                       Error);
  cudnn::Normalize nz;
  CHECK_THROWS_WITH_AS(nz.forward(zeros({2, 3, 4}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.Normalize::updateOutput: expected a [N x D] or [D] input"), Error);
  cudnn::PReLU pr(3);
  pr.to(gpu);
  CHECK_THROWS_WITH_AS(pr.forward(zeros({2, 4}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.PReLU::updateOutput: expected an input with 3 channels"), Error);
}
