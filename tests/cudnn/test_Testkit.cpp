// test_Testkit.cpp: the testing kit's whole twin contract (nn::testkit::check_twin_contract: every
// dtype, training and evaluation, contiguous or not, NaN/Inf, an empty batch, steady state,
// convert and model-file round trips) holds for built-in twins, as it does for a user's
// (samples/extension); and it fails, naming the check, for a twin that is not the module's.
#include <doctest/doctest.h>

#include "cudnn/Linear.h"
#include "cudnn/ReLU.h"
#include "cudnn/Tanh.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Tanh.h"
#include "testkit/Contract.h"

using namespace tensor;

TEST_CASE("testkit::check_twin_contract holds for cudnn.ReLU, cudnn.Tanh and cudnn.Linear") {
  Generator gen(4401);
  const Tensor x = uniform({6, 5}, -2, 2, gen, DType::Float64);
  const auto r1 = nn::testkit::check_twin_contract([] { return std::make_shared<nn::ReLU>(); },
                                                   [] { return std::make_shared<cudnn::ReLU>(); }, x);
  const auto r2 = nn::testkit::check_twin_contract([] { return std::make_shared<nn::Tanh>(); },
                                                   [] { return std::make_shared<cudnn::Tanh>(); }, x);
  const auto r3 = nn::testkit::check_twin_contract([] { return std::make_shared<nn::Linear>(5, 3); },
                                                   [] { return std::make_shared<cudnn::Linear>(5, 3); }, x);
  for (const auto* r : {&r1, &r2, &r3}) {
    INFO(r->str());
    CHECK(r->ok());
    CHECK(r->checks > 50);
  }
}

TEST_CASE("testkit::check_twin_contract fails for a twin of another module, naming the check") {
  Generator gen(4402);
  const Tensor x = uniform({6, 5}, -2, 2, gen, DType::Float64);
  nn::testkit::ContractOptions o;
  o.dtypes = {DType::Float32};
  o.convert = false;
  o.modelFile = false;
  const auto r = nn::testkit::check_twin_contract([] { return std::make_shared<nn::ReLU>(); },
                                                  [] { return std::make_shared<cudnn::Tanh>(); }, x, o);
  INFO(r.str());
  CHECK_FALSE(r.ok());
  CHECK(r.str().find("cudnn.Tanh is not the twin of nn.ReLU") != std::string::npos);
  CHECK(r.str().find("output") != std::string::npos);
}
