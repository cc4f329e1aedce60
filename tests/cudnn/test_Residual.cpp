// test_Residual.cpp: cudnn.Residual against nn.Residual in every dtype (identity shortcut,
// Linear shortcut, a Sequential block, batch and single inputs), a mixed container whose nn
// block stays on the CPU (built by hand and by convert with an exclusion predicate), a
// convert round trip, printing and the errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/Identity.h"
#include "cudnn/Linear.h"
#include "cudnn/Residual.h"
#include "cudnn/core/Config.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);

nn::ModulePtr linear(bool twin, int64_t in, int64_t out) {
  if (twin) return std::make_shared<cudnn::Linear>(in, out);
  return std::make_shared<nn::Linear>(in, out);
}
nn::ModulePtr identity(bool twin) {
  if (twin) return std::make_shared<cudnn::Identity>();
  return std::make_shared<nn::Identity>();
}
nn::ModulePtr seq(bool twin) {
  return std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{linear(twin, 4, 6), linear(twin, 6, 4), identity(twin)});
}

// 0: Residual(Linear); 1: Residual(Linear, Linear); 2: Residual(Sequential(Linear, Linear, Identity), Identity)
template <class R>
R build(int which, bool twin) {
  if (which == 0) return R(linear(twin, 4, 4));
  if (which == 1) return R(linear(twin, 4, 4), linear(twin, 4, 4));
  return R(seq(twin), identity(twin));
}
}  // namespace

TEST_CASE("cudnn.Residual matches nn.Residual (identity and Linear shortcuts, Sequential block) in every dtype") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3601);
  INFO("seed 3601");
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (int which : {0, 1, 2}) {
      for (const Shape& s : {Shape{3, 4}, Shape{4}, Shape{1, 4}}) {
        INFO("configuration ", which, " input ", shape_str(s));
        auto ref = build<nn::Residual>(which, false);
        auto twin = build<cudnn::Residual>(which, true);
        expect_twin_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            s.size() == 2 && s[0] > 1);
      }
    }
  }
}

TEST_CASE("cudnn.Residual holding an nn block (excluded from conversion) runs it on the CPU and still matches nn") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3602);
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    nn::Residual ref(linear(false, 4, 4), linear(false, 4, 4));
    cudnn::Residual twin(linear(false, 4, 4), linear(true, 4, 4));
    expect_twin_matches(ref, twin, uniform({3, 4}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
    CHECK(twin.block()->namedParameters()[0].second.is_cpu());
    CHECK(twin.shortcut()->namedParameters()[0].second.is_cuda());
    CHECK(twin.output.is_cuda());
  }
  // by convert() with an exclusion predicate: the block's first Linear stays nn
  auto net = std::make_shared<nn::Residual>(seq(false));
  nn::Residual ref(seq(false));
  ref.loadStateDict(net->stateDict());
  const nn::Module* kept = (*net->block()->children())[0].get();
  nn::ConvertReport report;
  nn::ModulePtr cu = nn::convert(net, cudnn::backend, [&](const nn::Module& m) { return &m == kept; }, &report);
  CHECK(cu->type_name() == "cudnn.Residual");
  CHECK(cu->str() ==
        "cudnn.Residual {\n"
        "  block: nn.Sequential {\n"
        "    [input -> (1) -> (2) -> (3) -> output]\n"
        "    (1): nn.Linear(4 -> 6)\n"
        "    (2): cudnn.Linear(6 -> 4)\n"
        "    (3): cudnn.Identity\n"
        "  }\n"
        "  shortcut: identity\n"
        "}");
  REQUIRE(report.excluded.size() == 1);
  CHECK(report.excluded[0] == "0.0: nn.Linear");
  const Tensor x = uniform({3, 4}, -1, 1, gen), g = uniform({3, 4}, -1, 1, gen);
  CHECK(max_rel_error(cu->forward(x.to(gpu)), ref.forward(x)) < 1e-5);
  CHECK(max_rel_error(cu->backward(x.to(gpu), g.to(gpu)), ref.backward(x, g)) < 1e-5);
  const auto got = cu->namedGradParameters(), want = ref.namedGradParameters();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(max_rel_error(got[i].second, want[i].second) < 1e-5);
}

TEST_CASE("cudnn.Residual convert round trip") {
  Generator gen(3603);
  expect_convert_roundtrip(std::make_shared<nn::Residual>(linear(false, 4, 4), linear(false, 4, 4)),
                           uniform({2, 4}, -1, 1, gen));
  expect_convert_roundtrip(std::make_shared<nn::Residual>(seq(false)), uniform({4}, -1, 1, gen));
}

TEST_CASE("cudnn.Residual printing and errors") {
  cudnn::Residual twin(linear(true, 4, 3), linear(true, 4, 3));
  CHECK(twin.str() ==
        "cudnn.Residual {\n"
        "  block: cudnn.Linear(4 -> 3)\n"
        "  shortcut: cudnn.Linear(4 -> 3)\n"
        "}");
  twin.to(gpu);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({5, 4})),
                       doctest::Contains("cudnn.Residual::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({5, 2}, DType::Float32, gpu)),
                       "In 1 module of cudnn.Residual: cudnn.Linear::updateOutput: expected input of [4] or "
                       "[batch x 4], got [5 x 2]",
                       Error);
  cudnn::Residual wrong(linear(true, 4, 3));
  wrong.to(gpu);
  CHECK_THROWS_WITH_AS(wrong.forward(zeros({5, 4}, DType::Float32, gpu)),
                       "cudnn.Residual::updateOutput: expected block and identity shortcut (the input) outputs of the "
                       "same shape, got [5 x 3] and [5 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(cudnn::Residual(nullptr), "nn.Residual: expected a block module, got nullptr", Error);
}
