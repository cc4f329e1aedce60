// test_VisionTransformerGpu.cpp: the ViT sample on the GPU: ClassTokenEmbedding's twin against
// the nn module in every dtype, and the whole network converted (every module a twin, nothing
// bridged to the CPU) against the nn network.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "samples/VisionTransformer.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("CudnnClassTokenEmbedding matches ClassTokenEmbedding in every dtype") {
  samples::register_vit_types();
  Generator gen(2513);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(name(dt));
    samples::ClassTokenEmbedding ref(8, 4);
    samples::ClassTokenEmbedding base(8, 4);
    samples::CudnnClassTokenEmbedding twin(std::move(base));
    CHECK(twin.type_name() == "samples.cudnn.ClassTokenEmbedding");
    expect_twin_matches(ref, twin, uniform({3, 8, 2, 2}, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
  }
}

TEST_CASE("the converted ViT runs every module on the GPU and matches the nn network") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  samples::register_vit_types();
  Generator gen(2514);
  auto ref = samples::vision_transformer(16, 2, 0.0);
  auto copy = samples::vision_transformer(16, 2, 0.0);
  copy->loadStateDict(ref->stateDict());
  nn::ConvertReport report;
  nn::ModulePtr twin = nn::convert(copy, cudnn::backend, {}, &report);
  INFO(report.str());
  auto* seq = dynamic_cast<nn::Sequential*>(twin.get());
  REQUIRE(seq);
  for (const nn::ModulePtr& m : seq->modules) {
    INFO(m->type_name());
    CHECK(m->computesOn(Device::cuda(0)));  // no child bridged to the CPU
  }
  ref->to(DType::Float64);
  expect_twin_matches(*ref, *twin, uniform({4, 1, 28, 28}, -1, 1, gen, DType::Float64), DType::Float32,
                      {1e-4, 1e-3});
}
