// test_swish.cpp: the CPU checks of ext::Swish with the testing kit, no test framework: each
// check returns a nn::testkit::Report, printed; any failure makes the exit status 1. Runs
// anywhere (CI runs it through scripts/check-install); test_swish_gpu.cpp checks the twin.
#include <cstdio>

#include "Register.h"
#include "Swish.h"
#include "convert/Convert.h"
#include "testkit/Testkit.h"

using nn::testkit::Report;
using tensor::DType;

int main() {
  ext::register_swish();
  int failed = 0;
  auto report = [&](const Report& r) {
    std::printf("%s\n", r.str().c_str());
    failed += r.ok() ? 0 : 1;
  };
  tensor::Generator gen(1);
  const tensor::Tensor x = tensor::uniform({4, 5, 3}, -3, 3, gen, DType::Float64);

  // input and beta gradients by central differences, for a few betas (beta = 1: SiLU)
  for (double beta : {1.0, 0.5, 2.0}) {
    ext::Swish m(beta);
    m.to(DType::Float64);
    report(nn::testkit::check_gradients(m, x));
  }
  ext::Swish m(1.5);
  report(nn::testkit::check_accumulation(m, x.to(DType::Float32)));
  ext::Swish fresh(0.25);
  report(nn::testkit::check_state_roundtrip(m, fresh, x.to(DType::Float32)));
  report(nn::testkit::check_model_file_roundtrip(m, x.to(DType::Float32)));

  // convert knows the pair where the twin was built (both directions are checked on the GPU)
  Report registered;
  registered.subject = "convert registration";
  bool listed = false;
  for (const std::string& t : nn::convertible_types(cudnn::backend)) listed = listed || t == "ext.Swish";
  registered.expect(listed == ext::has_cuda_twin(),
                    "ext.Swish listed by convertible_types: " + std::string(listed ? "yes" : "no"));
  report(registered);

  std::printf("test_swish: %s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}
