// test_Embedding.cpp: cudnn.Embedding (our kernels, cudnn/kernels/Embedding.h) against
// nn.Embedding in float32, float64, float16 and bfloat16: repeated indices, padding_idx,
// non-contiguous indices, gradient accumulation with a scale (nn's bits in float32 and float64),
// the same bits run to run (Note [Deterministic embedding gradients]), an index out of range as
// nn's error on both halves, empty inputs, the convert round trip and the errors. The checks are
// written here rather than through TwinCheck, which converts the input to the module's dtype.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>

#include "convert/Convert.h"
#include "cudnn/Embedding.h"
#include "nn/Embedding.h"
#include "tests/support/ErrorText.h"
#include "tests/support/NonContiguous.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

// int64 indices of `shape` in [0, num) from gen, many repeated when num is small.
Tensor indices(const Shape& shape, int64_t num, Generator& gen) {
  const Tensor u = uniform(shape, 0, static_cast<double>(num), gen, DType::Float64).contiguous();
  std::vector<int64_t> v(static_cast<size_t>(u.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::min<int64_t>(num - 1, static_cast<int64_t>(u.data<double>()[i]));
  return from_vector<int64_t>(v, shape);
}

struct Case {
  int64_t num, dim;
  std::optional<int64_t> pad;
  Shape input;
};
const Case kCases[] = {
    {10, 4, std::nullopt, {2, 7}},      // repeated indices
    {10, 4, 0, {3, 5}},                 // padding row 0
    {6, 33, -1, {40}},                  // padding from the end, odd width, many repeats
    {1000, 64, 3, {4, 16}},             // a larger table
    {5, 300, std::nullopt, {2, 3, 4}},  // rows wider than a block
};

// twin and nn (both in `dt`, nn's on float64 for 16-bit) on the same weight, indices and
// gradOutput: forward, then backward twice with scales 1 and -0.5.
void expect_matches(const Case& c, DType dt, bool noncontiguous, Generator& gen) {
  INFO(c.num, " -> ", c.dim, " input ", shape_str(c.input), " ", std::string(name(dt)),
       noncontiguous ? " non-contiguous" : "", c.pad ? " padding " + std::to_string(*c.pad) : std::string());
  const bool wide = dt == DType::Float32 || dt == DType::Float64;
  nn::Embedding ref(c.num, c.dim, c.pad);
  cudnn::Embedding twin(c.num, c.dim, c.pad);
  ref.to(wide ? dt : DType::Float64);
  twin.to(gpu);
  twin.to(dt);
  twin.loadStateDict(ref.stateDict());
  if (!wide) ref.loadStateDict(twin.stateDict());  // both on the 16-bit values
  ref.zeroGradParameters();
  twin.zeroGradParameters();
  const Tensor idx = indices(c.input, c.num, gen);
  Tensor idxg = idx.to(gpu);
  if (noncontiguous) idxg = noncontiguous_copy(idxg);
  const Tensor y = ref.forward(idx).clone();
  const Tensor yg = twin.forward(idxg).clone();
  CHECK(yg.dtype() == dt);
  CHECK(max_abs_diff(yg, y) == 0);  // a copy of the same values
  for (double scale : {1.0, -0.5}) {
    const Tensor g = uniform(y.sizes(), -1, 1, gen, ref.weight.dtype());
    ref.backward(idx, g, scale);
    CHECK_FALSE(twin.backward(idxg, g.to(gpu, dt), scale).defined());
  }
  if (wide) {
    CHECK(max_abs_diff(twin.gradWeight, ref.gradWeight) == 0);  // nn's bits (Note [Deterministic embedding gradients])
  } else {
    CHECK(rel_norm_error(twin.gradWeight, ref.gradWeight) <= TwinTolerance::for_dtype(dt).backward);
  }
  if (c.pad) CHECK(max_abs_diff(twin.gradWeight.select(0, *twin.paddingIdx), zeros({c.dim}, dt, gpu)) == 0);
}
}  // namespace

TEST_CASE("cudnn.Embedding matches nn.Embedding in every dtype: repeats, padding, non-contiguous indices") {
  Generator gen(2601);
  INFO("seed 2601");
  for (const Case& c : kCases) {
    for (DType dt : kDtypes) {
      for (bool nc : {false, true}) expect_matches(c, dt, nc, gen);
    }
  }
}

TEST_CASE("cudnn.Embedding: two backward passes give the same bits (Note [Deterministic embedding gradients])") {
  Generator gen(2602);
  for (DType dt : kDtypes) {
    INFO(std::string(name(dt)));
    cudnn::Embedding twin(50, 96, 7);
    twin.to(gpu);
    twin.to(dt);
    const Tensor idx = indices({64, 128}, 50, gen).to(gpu);  // ~160 uses of each row
    const Tensor g = uniform({64, 128, 96}, -1, 1, gen, dt, gpu);
    twin.forward(idx);
    twin.zeroGradParameters();
    twin.backward(idx, g);
    const Tensor first = twin.gradWeight.clone();
    twin.zeroGradParameters();
    twin.backward(idx, g);
    CHECK(max_abs_diff(twin.gradWeight, first) == 0);
  }
}

TEST_CASE("cudnn.Embedding: an index out of range is nn's error, naming it, forward and backward") {
  nn::Embedding ref(10, 3);
  cudnn::Embedding twin(10, 3);
  twin.to(gpu);
  for (int64_t bad : {10, -1, 1000}) {
    const Tensor idx = from_vector<int64_t>({1, 2, 3, bad, 4, bad}, {2, 3});
    INFO("bad index ", bad);
    const std::string want = error_of([&] { ref.forward(idx); });
    const std::string got = error_of([&] { twin.forward(idx.to(gpu)); });
    CHECK(has(want, "nn.Embedding::updateOutput: expected indices in [0, 10), got " + std::to_string(bad) +
                        " (element 3 of int64 [2 x 3] on cpu)"));
    CHECK(got == "cudnn" + want.substr(2, want.size() - 2 - std::string("cpu)").size()) + "cuda:0)");
    // backward checks too (the indices may differ from the forward's), as nn's updateGradInput
    const Tensor ok = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    twin.forward(ok.to(gpu));
    const std::string gb = error_of([&] { twin.backward(idx.to(gpu), zeros({2, 3, 3}, DType::Float32, gpu)); });
    CHECK(has(gb, "cudnn.Embedding::updateGradInput: expected indices in [0, 10), got " + std::to_string(bad) +
                      " (element 3 of int64 [2 x 3] on cuda:0)"));
  }
}

TEST_CASE("cudnn.Embedding: empty inputs give nn's empty shapes and no gradient") {
  for (DType dt : kDtypes) {
    INFO(std::string(name(dt)));
    cudnn::Embedding twin(10, 4, 0);
    twin.to(gpu);
    twin.to(dt);
    twin.zeroGradParameters();
    for (const Shape& s : {Shape{0}, Shape{2, 0}}) {
      const Tensor idx = zeros(s, DType::Int64, gpu);
      Shape want = s;
      want.push_back(4);
      CHECK(twin.forward(idx).sizes() == want);
      twin.backward(idx, zeros(want, dt, gpu));
      CHECK(max_abs_diff(twin.gradWeight, zeros({10, 4}, dt, gpu)) == 0);
    }
  }
}

TEST_CASE("cudnn.Embedding: convert round trip, printing and errors") {
  Generator gen(2603);
  auto m = std::make_shared<nn::Embedding>(12, 5, 2);
  const Tensor idx = indices({3, 4}, 12, gen);
  const Tensor y = m->forward(idx).clone();
  const auto before = m->stateDict();
  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  CHECK(cu->type_name() == "cudnn.Embedding");
  CHECK(cu->str() == "cudnn.Embedding(12 -> 5, padding_idx=2)");
  for (const auto& [name, t] : cu->stateDict()) CHECK(t.is_cuda());
  CHECK(max_abs_diff(cu->forward(idx.to(gpu)), y) == 0);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  CHECK(back->type_name() == "nn.Embedding");
  for (const auto& [name, t] : back->stateDict()) CHECK(max_abs_diff(t, before.at(name)) == 0);

  // nn.Embedding bridges CUDA indices (Note [Device bridging] in nn/Module.cpp)
  nn::Embedding bridged(12, 5, 2);
  bridged.loadStateDict(before);
  const Tensor yb = bridged.forward(idx.to(gpu));
  CHECK(yb.device() == gpu);
  CHECK(max_abs_diff(yb.cpu(), y) == 0);

  cudnn::Embedding twin(12, 5);
  CHECK_THROWS_WITH_AS(twin.forward(idx),
                       "cudnn.Embedding::updateOutput: expected input on a CUDA device, got int64 [3 x 4] on cpu (move "
                       "it with .to(tensor::Device::cuda()))",
                       Error);
  twin.to(gpu);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({3}, DType::Float32, gpu)),
                       "cudnn.Embedding::updateOutput: expected int64 indices, got float32 [3] on cuda:0", Error);
  twin.forward(idx.to(gpu));
  const std::string e = error_of([&] { twin.backward(idx.to(gpu), zeros({3, 4, 6}, DType::Float32, gpu)); });
  INFO(e);
  CHECK(has(e, "cudnn.Embedding::updateGradInput: expected gradOutput [3 x 4 x 5] of the weight's dtype float32"));
}
