// test_GradInputNeeded.cpp: the gradInput switch (Note [gradInput not needed] in nn/Module.cpp):
// parameter gradients identical with and without it, gradInput left empty where it is off,
// how containers pass it on, updateGradInput() unaffected, the error when a later module
// withholds gradOutput, and a counting module showing which passes run.
#include <doctest/doctest.h>

#include "nn/Identity.h"
#include "tests/support/GradCheck.h"
#include "tests/support/GradInputCases.h"

using namespace tensor;
using namespace testing;

namespace {

// The parameter gradients after one zeroed forward + backward, cloned.
std::vector<std::pair<std::string, Tensor>> gradients_of(nn::Module& net, const Tensor& x, const Tensor& g) {
  net.zeroGradParameters();
  net.forward(x);
  net.backward(x, g);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : net.namedGradParameters()) out.emplace_back(name, t.clone());
  return out;
}

struct Counting : nn::Identity {
  int gradInputs = 0, accs = 0;
  const Tensor& updateGradInput(const Tensor& x, const Tensor& g) override {
    ++gradInputs;
    return nn::Identity::updateGradInput(x, g);
  }
  void accGradParameters(const Tensor&, const Tensor&, double) override { ++accs; }
};

}  // namespace

TEST_CASE("without gradInput the parameter gradients are the same, bit for bit, and gradInput is empty") {
  for (const GradInputCase& c : grad_input_cases()) {
    INFO(c.name);
    manual_seed(7);
    auto with = c.build();
    manual_seed(7);
    auto without = c.build();
    with->to(DType::Float64);
    without->to(DType::Float64);
    without->setGradInputNeeded(false);
    CHECK(with->gradInputNeeded());
    CHECK_FALSE(without->gradInputNeeded());
    Generator gen(11);
    const Tensor x = uniform(c.input, -1, 1, gen, DType::Float64);
    const Tensor g = uniform(with->forward(x).sizes(), -1, 1, gen, DType::Float64);
    const auto a = gradients_of(*with, x, g);
    const auto b = gradients_of(*without, x, g);
    REQUIRE(a.size() == b.size());
    REQUIRE(!a.empty());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO(a[i].first);
      CHECK(a[i].first == b[i].first);
      CHECK(max_abs_diff(a[i].second, b[i].second) == 0);
    }
    CHECK(with->gradInput.defined());
    CHECK(with->gradInput.sizes() == x.sizes());
    // the LSTM's weight gradients need its input-gradient pass: it computes gradInput anyway
    CHECK(without->gradInput.defined() == !c.skipsGradInput);
    CHECK(without->get(0)->gradInput.defined() == !c.skipsGradInput);
    // the modules after the first still hand back their gradInput
    CHECK(without->get(1)->gradInput.defined());
    // a second step works the same (nothing stale left behind)
    const auto b2 = gradients_of(*without, x, g);
    for (size_t i = 0; i < a.size(); ++i) CHECK(max_abs_diff(a[i].second, b2[i].second) == 0);
    // switched back on, gradInput is computed again and equals the reference
    without->setGradInputNeeded(true);
    gradients_of(*without, x, g);
    REQUIRE(without->gradInput.defined());
    CHECK(max_abs_diff(without->gradInput, with->gradInput) == 0);
  }
}

TEST_CASE("containers pass the switch to the children that see their input") {
  const auto cases = grad_input_cases();
  auto conv = cases[0].build();
  conv->setGradInputNeeded(false);
  CHECK_FALSE(conv->get(0)->gradInputNeeded());
  for (size_t i = 1; i < conv->size(); ++i) CHECK(conv->get(i)->gradInputNeeded());

  auto concat = cases[1].build();
  concat->setGradInputNeeded(false);
  auto& cat = dynamic_cast<nn::Concat&>(*concat->get(0));
  CHECK_FALSE(cat.gradInputNeeded());
  CHECK_FALSE(cat.get(0)->gradInputNeeded());
  CHECK_FALSE(cat.get(1)->gradInputNeeded());
  auto& branch = dynamic_cast<nn::Sequential&>(*cat.get(1));
  CHECK_FALSE(branch.get(0)->gradInputNeeded());
  CHECK(branch.get(1)->gradInputNeeded());  // Tanh sees the Linear's output, not the input
  CHECK(concat->get(1)->gradInputNeeded());

  auto residual = cases[2].build();
  residual->setGradInputNeeded(false);
  auto& res = dynamic_cast<nn::Residual&>(*residual->get(0));
  CHECK_FALSE(res.get(0)->gradInputNeeded());
  CHECK_FALSE(res.get(1)->gradInputNeeded());

  residual->setGradInputNeeded(true);
  CHECK(res.get(0)->gradInputNeeded());
  CHECK(res.get(1)->gradInputNeeded());

  // children added afterwards get it where they see the input
  nn::Sequential later;
  later.setGradInputNeeded(false);
  later.add(std::make_shared<nn::Linear>(3, 3)).add(std::make_shared<nn::Linear>(3, 2));
  CHECK_FALSE(later.get(0)->gradInputNeeded());
  CHECK(later.get(1)->gradInputNeeded());
  nn::Concat laterCat(1);
  laterCat.setGradInputNeeded(false);
  laterCat.add(std::make_shared<nn::Linear>(3, 3)).add(std::make_shared<nn::Linear>(3, 2));
  CHECK_FALSE(laterCat.get(0)->gradInputNeeded());
  CHECK_FALSE(laterCat.get(1)->gradInputNeeded());
}

TEST_CASE("backward skips updateGradInput where gradInput is not needed; updateGradInput itself still computes") {
  auto counting = std::make_shared<Counting>();
  nn::Sequential net({counting, std::make_shared<nn::Linear>(3, 2)});
  net.setGradInputNeeded(false);
  const Tensor x = uniform({4, 3}, -1, 1);
  const Tensor g = uniform({4, 2}, -1, 1);
  net.forward(x);
  const Tensor& gi = net.backward(x, g);
  CHECK(counting->gradInputs == 0);
  CHECK(counting->accs == 1);
  CHECK_FALSE(gi.defined());
  CHECK_FALSE(net.gradInput.defined());
  // Torch's three-call form is explicit: it computes what it is asked for
  net.updateGradInput(x, g);
  CHECK(counting->gradInputs == 1);
  CHECK(net.gradInput.defined());
}

TEST_CASE("a module before one without gradInput gets no gradOutput, and says so") {
  nn::Sequential net({std::make_shared<nn::Linear>(3, 3), std::make_shared<nn::Linear>(3, 2)});
  net.get(1)->setGradInputNeeded(false);
  const Tensor x = uniform({4, 3}, -1, 1);
  net.forward(x);
  try {
    net.backward(x, uniform({4, 2}, -1, 1));
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("In 1 module of nn.Sequential") != std::string::npos);
    CHECK(what.find("nn.Linear::backward: expected a gradOutput, got an undefined tensor") != std::string::npos);
    CHECK(what.find("setGradInputNeeded(false)") != std::string::npos);
  }
}

TEST_CASE("freeing intermediate gradients: the same gradients, the children's gradInput released") {
  // Note [Freeing intermediate gradients] in nn/Container.cpp
  for (const GradInputCase& c : grad_input_cases()) {
    INFO(c.name);
    manual_seed(7);
    auto kept = c.build();
    manual_seed(7);
    auto freed = c.build();
    kept->to(DType::Float64);
    freed->to(DType::Float64);
    freed->setFreeIntermediateGradients(true);
    CHECK(freed->freesIntermediateGradients());
    CHECK(freed->modules.back()->freesIntermediateGradients());
    Generator gen(13);
    const Tensor x = uniform(c.input, -1, 1, gen, DType::Float64);
    const Tensor y = kept->forward(x);
    const Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    for (int step = 0; step < 2; ++step) {  // the second step reallocates what the first released
      const auto a = gradients_of(*kept, x, g);
      const Tensor gin_kept = kept->gradInput.clone();
      const auto b = gradients_of(*freed, x, g);
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) CHECK(max_abs_diff(a[i].second, b[i].second) == 0);
      CHECK(max_abs_diff(freed->gradInput, gin_kept) == 0);
      for (size_t i = 1; i < freed->modules.size(); ++i) {
        CHECK(kept->modules[i]->gradInput.defined());
        CHECK_FALSE(freed->modules[i]->gradInput.defined());
      }
    }
    // accGradParameters needs the gradients backward() let go of
    CHECK_THROWS_WITH_AS(freed->accGradParameters(x, g), doctest::Contains("expected updateGradInput() first"),
                         nn::Error);
    freed->updateGradInput(x, g);
    freed->accGradParameters(x, g);
  }
  // a child added later follows the container
  nn::Sequential net;
  net.setFreeIntermediateGradients(true);
  net.add(std::make_shared<nn::Sequential>());
  CHECK(net.modules[0]->freesIntermediateGradients());
}
