// test_Concat.cpp: cudnn.Concat against nn.Concat in every dtype (dimensions 1, 0 and -1,
// batch and single inputs, nested containers, Identity children), a mixed container whose
// nn child stays on the CPU (built by hand and by convert with an exclusion predicate), a
// convert round trip, printing and the errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/Concat.h"
#include "cudnn/Identity.h"
#include "cudnn/Linear.h"
#include "cudnn/core/Config.h"
#include "nn/Concat.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

template <class M, class... A>
nn::ModulePtr make(A... a) {
  return std::make_shared<M>(a...);
}

// Linear(in, o1), Sequential(Linear(in, 3), Linear(3, o2)) and Identity, concatenated along dim.
template <class Concat, class Linear, class Identity>
Concat branches(int64_t dim, int64_t in, int64_t o1, int64_t o2) {
  auto seq = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{make<Linear>(in, int64_t{3}), make<Linear>(int64_t{3}, o2)});
  return Concat(dim, {make<Linear>(in, o1), seq, make<Identity>()});
}
}  // namespace

TEST_CASE("cudnn.Concat matches nn.Concat (dimensions 1, -1 and 0, batch and single, nested) in every dtype") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3501);
  INFO("seed 3501");
  for (DType dt : kDtypes) {
    for (int64_t dim : {1, -1}) {
      for (bool nc : {false, true}) {
        INFO("dimension ", dim, nc ? ", non-contiguous" : "");
        auto ref = branches<nn::Concat, nn::Linear, nn::Identity>(dim, 5, 2, 4);
        auto twin = branches<cudnn::Concat, cudnn::Linear, cudnn::Identity>(dim, 5, 2, 4);
        expect_twin_matches(ref, twin, uniform({3, 5}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
      }
    }
    // dimension 0 of a single sample, and of a batch (stacks the samples)
    auto ref0 = branches<nn::Concat, nn::Linear, nn::Identity>(0, 4, 4, 4);
    auto twin0 = branches<cudnn::Concat, cudnn::Linear, cudnn::Identity>(0, 4, 4, 4);
    expect_twin_matches(ref0, twin0, uniform({4}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
    expect_twin_matches(ref0, twin0, uniform({2, 4}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
  }
}

TEST_CASE("cudnn.Concat holding an nn child (excluded from conversion) runs it on the CPU and still matches nn") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3502);
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    nn::Concat ref(1, {make<nn::Linear>(int64_t{4}, int64_t{3}), make<nn::Linear>(int64_t{4}, int64_t{2})});
    cudnn::Concat twin(1, {make<cudnn::Linear>(int64_t{4}, int64_t{3}), make<nn::Linear>(int64_t{4}, int64_t{2})});
    expect_twin_matches(ref, twin, uniform({5, 4}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
    CHECK(twin.get(0)->namedParameters()[0].second.is_cuda());
    CHECK(twin.get(1)->namedParameters()[0].second.is_cpu());  // computed through the device bridge
    CHECK(twin.output.is_cuda());
    CHECK(twin.gradInput.is_cuda());
  }
  // the same network by convert() with an exclusion predicate
  auto keep = make<nn::Linear>(int64_t{4}, int64_t{2});
  auto net = std::make_shared<nn::Concat>(1, std::initializer_list<nn::ModulePtr>{
                                                 make<nn::Linear>(int64_t{4}, int64_t{3}), keep, make<nn::Identity>()});
  nn::Concat ref(1, {make<nn::Linear>(int64_t{4}, int64_t{3}), make<nn::Linear>(int64_t{4}, int64_t{2}),
                     make<nn::Identity>()});
  ref.loadStateDict(net->stateDict());
  nn::ConvertReport report;
  nn::ModulePtr cu = nn::convert(net, cudnn::backend, [&](const nn::Module& m) { return &m == keep.get(); }, &report);
  CHECK(cu->type_name() == "cudnn.Concat");
  CHECK(report.converted.size() == 3);  // the container, Linear and Identity
  REQUIRE(report.excluded.size() == 1);
  CHECK(report.excluded[0] == "1: nn.Linear");
  CHECK((*cu->children())[1] == keep);
  const Tensor x = uniform({3, 4}, -1, 1, gen);
  const Tensor g = uniform({3, 9}, -1, 1, gen);
  CHECK(max_rel_error(cu->forward(x.to(gpu)), ref.forward(x)) < 1e-5);
  CHECK(max_rel_error(cu->backward(x.to(gpu), g.to(gpu)), ref.backward(x, g)) < 1e-5);
  const auto got = cu->namedGradParameters(), want = ref.namedGradParameters();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(max_rel_error(got[i].second, want[i].second) < 1e-5);
}

TEST_CASE("cudnn.Concat convert round trip") {
  Generator gen(3503);
  expect_convert_roundtrip(std::make_shared<nn::Concat>(
                               1, std::initializer_list<nn::ModulePtr>{make<nn::Linear>(int64_t{4}, int64_t{2}),
                                                                       make<nn::Identity>()}),
                           uniform({3, 4}, -1, 1, gen));
}

TEST_CASE("cudnn.Concat printing and errors") {
  cudnn::Concat twin(1, {make<cudnn::Linear>(int64_t{4}, int64_t{3}), make<nn::Linear>(int64_t{4}, int64_t{2})});
  CHECK(twin.str() ==
        "cudnn.Concat {\n"
        "  input\n"
        "    |`-> (1): cudnn.Linear(4 -> 3)\n"
        "    |`-> (2): nn.Linear(4 -> 2)\n"
        "     ... -> output\n"
        "}");
  twin.to(gpu);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({5, 4})),
                       "cudnn.Concat::updateOutput: expected input on a CUDA device, got float32 [5 x 4] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({5, 3}, DType::Float32, gpu)),
                       "In 1 module of cudnn.Concat: cudnn.Linear::updateOutput: expected input of [4] or "
                       "[batch x 4], got [5 x 3]",
                       Error);
  cudnn::Concat mismatch(0, {make<cudnn::Linear>(int64_t{4}, int64_t{2}), make<cudnn::Linear>(int64_t{4}, int64_t{3})});
  mismatch.to(gpu);
  CHECK_THROWS_WITH_AS(mismatch.forward(zeros({5, 4}, DType::Float32, gpu)),
                       "cudnn.Concat::updateOutput: expected the output of module 2 to match [5 x 2] (module 1) "
                       "except in dimension 0, got [5 x 3]",
                       Error);
  const Tensor x = zeros({5, 4}, DType::Float32, gpu);
  twin.forward(x);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({5, 5})),
                       "cudnn.Concat::backward: expected gradOutput on cuda:0 (the input's device), got float32 "
                       "[5 x 5] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({5, 4}, DType::Float32, gpu)),
                       "cudnn.Concat::backward: expected gradOutput of [5 x 5], got [5 x 4]", Error);
}
