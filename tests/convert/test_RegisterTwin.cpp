// test_RegisterTwin.cpp: a user's twin pair registered at run time (nn::register_twin, issue 27
// item 1): convert() swaps it to nn as it swaps the built-in pairs (moving the state, reporting
// it), convertible_types lists it, and bad registrations are refused with the name. The cudnn
// direction needs a GPU: tests/convert/test_Convert.cpp takes it there.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "convert/Convert.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "tests/support/ErrorText.h"

namespace {

// A user's module: y = x * factor (a buffer, so that conversion must carry state).
class UserScale : public nn::Module {
 public:
  explicit UserScale(double f) : factor(tensor::full({1}, f)) {}
  UserScale(UserScale&&) = default;
  const nn::Tensor& updateOutput(const nn::Tensor& input) override {
    output = input.mul(factor.item());
    return output;
  }
  const nn::Tensor& updateGradInput(const nn::Tensor&, const nn::Tensor& gradOutput) override {
    gradInput = gradOutput.mul(factor.item());
    return gradInput;
  }
  static constexpr std::string_view kTypeName = "user.Scale";
  std::string type_name() const override { return std::string(kTypeName); }
  nn::Tensor factor;

 protected:
  void visitState(nn::StateVisitor& v) override { v.buffer("factor", factor); }
};

// Its "twin": what a user's cuDNN/CUDA module would be (it claims the cudnn backend).
class UserCudnnScale : public UserScale {
 public:
  using UserScale::UserScale;
  explicit UserCudnnScale(UserScale&& m) : UserScale(std::move(m)) {}
  static constexpr std::string_view kTypeName = "user.cudnn.Scale";
  std::string type_name() const override { return std::string(kTypeName); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("a registered pair converts back to nn as the built-in twins do, state moved and reported") {
  static const bool registered = [] {
    nn::register_twin<UserScale, UserCudnnScale>();
    return true;
  }();
  CHECK(registered);
  CHECK(lists(nn::convertible_types(nn::Backend::cudnn), "user.Scale"));
  CHECK(lists(nn::convertible_types(nn::Backend::nn), "user.cudnn.Scale"));

  auto twin = std::make_shared<UserCudnnScale>(2.5);
  const tensor::Storage* storage = twin->factor.storage().get();
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 2));
  net->add(twin);
  nn::ConvertReport report;
  nn::ModulePtr back = nn::convert(net, nn::backend, {}, &report);
  CHECK(back == net);  // the root, a container, stays; its child is swapped in place
  const auto* child = dynamic_cast<UserScale*>(net->get(1).get());
  REQUIRE(child != nullptr);
  CHECK(child->type_name() == "user.Scale");
  CHECK(child->backendKind() == nn::Backend::nn);
  CHECK(child->factor.item() == 2.5);
  CHECK(child->factor.storage().get() == storage);  // moved, not copied
  REQUIRE(report.converted.size() == 1);
  CHECK(report.converted[0] == "1: user.cudnn.Scale -> user.Scale");
  CHECK(report.unknown.empty());
  const tensor::Tensor y = net->forward(tensor::ones({4, 3}));
  CHECK(y.sizes() == tensor::Shape{4, 2});
}

TEST_CASE("register_twin refuses built-in names, names taken before, one name twice and empty factories") {
  using testing::error_of;
  using testing::has;
  auto make = [](nn::Module&) -> nn::ModulePtr { return nullptr; };
  CHECK(has(error_of([&] { nn::register_twin("nn.ReLU", "user.cudnn.ReLU", make, make); }),
            "nn::register_twin(nn.ReLU, user.cudnn.ReLU): expected types the library does not define, got nn.ReLU"));
  CHECK(has(error_of([&] { nn::register_twin("user.X", "cudnn.Linear", make, make); }), "got cudnn.Linear"));
  CHECK(has(error_of([&] { nn::register_twin("user.X", "nn.ClassNLLCriterion", make, make); }),
            "got nn.ClassNLLCriterion"));
  CHECK(has(error_of([&] { nn::register_twin("user.Y", "user.Y", make, make); }), "two different, non-empty"));
  CHECK(has(error_of([&] { nn::register_twin("user.Z", "", make, make); }), "two different, non-empty"));
  CHECK(has(error_of([&] { nn::register_twin("user.Z", "user.cudnn.Z", make, nullptr); }), "both factories"));
  nn::register_twin("user.Twice", "user.cudnn.Twice", make, make);
  CHECK(has(error_of([&] { nn::register_twin("user.Twice", "user.cudnn.Other", make, make); }),
            "expected a type not registered yet, got user.Twice (registered before)"));
  CHECK(has(error_of([&] { nn::register_twin("user.Other", "user.cudnn.Twice", make, make); }),
            "got user.cudnn.Twice (registered before)"));
}

TEST_CASE("register_twin is thread-safe: concurrent registrations and conversions all land") {
  auto make = [](nn::Module&) -> nn::ModulePtr { return nullptr; };
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string name = "user.T" + std::to_string(t) + "_" + std::to_string(i);
        nn::register_twin(name, name + ".cudnn", make, make);
        // the same name from another thread as well: exactly one of each pair is refused
        try {
          nn::register_twin("user.Shared" + std::to_string(i), "user.cudnn.Shared" + std::to_string(i), make, make);
        } catch (const tensor::Error&) {
          ++refused;
        }
        (void)nn::convertible_types(nn::Backend::nn);
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto names = nn::convertible_types(nn::Backend::cudnn);
  for (int t = 0; t < 8; ++t) {
    for (int i = 0; i < 25; ++i) CHECK(lists(names, "user.T" + std::to_string(t) + "_" + std::to_string(i)));
  }
  CHECK(refused.load() == 7 * 25);
}

namespace {
// A module that carries the registered twin's name without being of its class.
class Impostor : public nn::Module {
 public:
  const nn::Tensor& updateOutput(const nn::Tensor& input) override { return output = input; }
  const nn::Tensor& updateGradInput(const nn::Tensor&, const nn::Tensor& g) override { return gradInput = g; }
  std::string type_name() const override { return "user.cudnn.Checked"; }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};

class UserChecked : public UserScale {
 public:
  using UserScale::UserScale;
  static constexpr std::string_view kTypeName = "user.Checked";
  std::string type_name() const override { return std::string(kTypeName); }
};

class UserCudnnChecked : public UserChecked {
 public:
  explicit UserCudnnChecked(UserChecked&& m) : UserChecked(std::move(m)) {}
  static constexpr std::string_view kTypeName = "user.cudnn.Checked";
  std::string type_name() const override { return std::string(kTypeName); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};
}  // namespace

TEST_CASE("a factory that returns nullptr is refused with the type and where it came from, the net unchanged") {
  using testing::error_of;
  using testing::has;
  auto null_factory = [](nn::Module&) -> nn::ModulePtr { return nullptr; };
  nn::register_twin("user.Null", "user.cudnn.Null", null_factory, null_factory);
  class NullTwin : public UserScale {
   public:
    using UserScale::UserScale;
    std::string type_name() const override { return "user.cudnn.Null"; }
    nn::Backend backendKind() const override { return nn::Backend::cudnn; }
  };
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 2));
  auto twin = std::make_shared<NullTwin>(1.5);
  net->add(twin);
  const std::string e = error_of([&] { nn::convert(net, nn::backend); });
  CHECK(has(e, "nn::convert: the nn factory for user.cudnn.Null (at 1, registered with nn::register_twin) returned nullptr"));
  CHECK(net->get(1) == twin);  // the child is still there
}

TEST_CASE("register_twin<Nn, Cu>: a module with the twin's name but not its class is refused by name, not bad_cast") {
  using testing::error_of;
  using testing::has;
  nn::register_twin<UserChecked, UserCudnnChecked>();
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<Impostor>());
  const std::string e = error_of([&] { nn::convert(net, nn::backend); });
  CHECK(has(e, "nn::convert: the module named user.cudnn.Checked is not of the class registered for it by "
               "nn::register_twin<user.Checked, user.cudnn.Checked>"));
}
