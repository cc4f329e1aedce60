// test_Convert.cpp: nn::convert on a network of the twins this branch adds: a Sequential of
// Linear, Dropout, Residual(Sequential(Linear, Identity)), a user's own module, View and
// Concat, converted with and without an exclusion predicate. The report lists what was
// converted, excluded and left without a twin; printing shows the twins inside
// nn.Sequential; training modes, gradients and parameters survive nn -> cudnn -> nn
// exactly; a partly converted network trains one SGD step as the nn network does, and
// converted again keeps its twins' GPU tensors without a copy.
#include <doctest/doctest.h>

#include <algorithm>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "cudnn/modules.h"
#include "nn/Concat.h"
#include "nn/Dropout.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/Residual.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/View.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

// A user's own module, unknown to convert's table: y = factor * x, computed on the CPU.
class Scale : public nn::Module {
 public:
  explicit Scale(double f) : factor(f) {}
  const Tensor& updateOutput(const Tensor& input) override {
    output = input.mul(factor);
    return output;
  }
  const Tensor& updateGradInput(const Tensor&, const Tensor& gradOutput) override {
    gradInput = gradOutput.mul(factor);
    return gradInput;
  }
  std::string type_name() const override { return "user.Scale"; }
  double factor;
};

struct Net {
  std::shared_ptr<nn::Sequential> root;
  nn::ModulePtr middleLinear;  // the Linear inside the Residual's block
  nn::ModulePtr user;
};

// Linear(6 -> 8), Dropout(0.3), Residual(Sequential(Linear(8 -> 8), Identity)), Scale(0.5),
// View(2, 4), Concat(1, {Identity, Identity}): [N x 6] -> [N x 4 x 4]
Net build() {
  Net n;
  n.middleLinear = std::make_shared<nn::Linear>(8, 8);
  auto block = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{n.middleLinear, std::make_shared<nn::Identity>()});
  n.user = std::make_shared<Scale>(0.5);
  n.root = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::Linear>(6, 8), std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Residual>(block),
      n.user, std::make_shared<nn::View>(2, 4),
      std::make_shared<nn::Concat>(1, std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Identity>(),
                                                                           std::make_shared<nn::Identity>()})});
  return n;
}

std::vector<std::string> type_names(nn::Module& m) {
  std::vector<std::string> out;
  m.apply([&](nn::Module& x) { out.push_back(x.type_name()); });
  return out;
}
std::vector<bool> training_modes(nn::Module& m) {
  std::vector<bool> out;
  m.apply([&](nn::Module& x) { out.push_back(x.isTraining()); });
  return out;
}
}  // namespace

TEST_CASE("convert without a predicate: every known module becomes its twin, the user's module stays and is reported") {
  Net n = build();
  const nn::Module* root = n.root.get();
  nn::ConvertReport report;
  nn::ModulePtr cu = nn::convert(n.root, cudnn::backend, {}, &report);
  CHECK(cu.get() == root);  // nn.Sequential has no twin: the root stays, its children are swapped
  // a container is listed after its children
  CHECK(report.converted ==
        std::vector<std::string>{"0: nn.Linear -> cudnn.Linear", "1: nn.Dropout -> cudnn.Dropout",
                                 "2.0.0: nn.Linear -> cudnn.Linear", "2.0.1: nn.Identity -> cudnn.Identity",
                                 "2: nn.Residual -> cudnn.Residual", "4: nn.View -> cudnn.View",
                                 "5.0: nn.Identity -> cudnn.Identity", "5.1: nn.Identity -> cudnn.Identity",
                                 "5: nn.Concat -> cudnn.Concat"});
  CHECK(report.excluded.empty());
  CHECK(report.unknown == std::vector<std::string>{"3: user.Scale"});
  CHECK(report.str() == "9 converted, 0 excluded, 1 without a twin\n  no twin: 3: user.Scale");
  CHECK((*cu->children())[3] == n.user);  // left in place
  CHECK(cu->str() ==
        "nn.Sequential {\n"
        "  [input -> (1) -> (2) -> (3) -> (4) -> (5) -> (6) -> output]\n"
        "  (1): cudnn.Linear(6 -> 8)\n"
        "  (2): cudnn.Dropout(0.300000)\n"
        "  (3): cudnn.Residual {\n"
        "    block: nn.Sequential {\n"
        "      [input -> (1) -> (2) -> output]\n"
        "      (1): cudnn.Linear(8 -> 8)\n"
        "      (2): cudnn.Identity\n"
        "    }\n"
        "    shortcut: identity\n"
        "  }\n"
        "  (4): user.Scale\n"
        "  (5): cudnn.View(2, 4)\n"
        "  (6): cudnn.Concat {\n"
        "    input\n"
        "      |`-> (1): cudnn.Identity\n"
        "      |`-> (2): cudnn.Identity\n"
        "       ... -> output\n"
        "  }\n"
        "}");
  for (const auto& [name, t] : cu->stateDict()) CHECK(t.is_cuda());
  // it runs: cudnn modules on the GPU, the user's module on the CPU through the bridge
  Generator gen(4401);
  const Tensor y = cu->forward(uniform({3, 6}, -1, 1, gen, DType::Float32, gpu));
  CHECK(y.is_cuda());
  CHECK(y.sizes() == Shape{3, 4, 4});
  // converting again changes nothing
  nn::ConvertReport again;
  nn::convert(cu, cudnn::backend, {}, &again);
  CHECK(again.converted.empty());
  CHECK(again.unknown == std::vector<std::string>{"3: user.Scale"});
}

TEST_CASE("convert with a predicate leaves the excluded Linear in nn and reports it") {
  Net n = build();
  nn::ConvertReport report;
  const nn::Module* keep = n.middleLinear.get();
  nn::convert(
      n.root, cudnn::backend, [&](const nn::Module& m) { return &m == keep; }, &report);
  CHECK(report.converted.size() == 8);
  CHECK(report.excluded == std::vector<std::string>{"2.0.0: nn.Linear"});
  CHECK(report.unknown == std::vector<std::string>{"3: user.Scale"});
  CHECK(n.middleLinear->type_name() == "nn.Linear");
  for (const auto& [name, t] : n.middleLinear->stateDict()) CHECK(t.is_cpu());
  CHECK(type_names(*n.root) == std::vector<std::string>{"nn.Sequential", "cudnn.Linear", "cudnn.Dropout",
                                                        "cudnn.Residual", "nn.Sequential", "nn.Linear",
                                                        "cudnn.Identity", "user.Scale", "cudnn.View", "cudnn.Concat",
                                                        "cudnn.Identity", "cudnn.Identity"});
  // a predicate written against nn types also excludes by type
  Net m = build();
  nn::ConvertReport byType;
  nn::convert(
      m.root, cudnn::backend, [](const nn::Module& x) { return x.type_name() == "nn.Dropout"; }, &byType);
  CHECK(byType.excluded == std::vector<std::string>{"1: nn.Dropout"});
  CHECK((*m.root->children())[1]->type_name() == "nn.Dropout");
}

TEST_CASE("training modes, gradients and parameters survive nn -> cudnn -> nn exactly") {
  Net n = build();
  n.root->get(1)->evaluate();  // the Dropout
  n.middleLinear->evaluate();
  Generator gen(4402);
  const Tensor x = uniform({4, 6}, -1, 1, gen);
  n.root->forward(x);
  n.root->backward(x, uniform({4, 4, 4}, -1, 1, gen));
  const auto params = n.root->namedParameters(), grads = n.root->namedGradParameters();
  std::vector<Tensor> param_copies, grad_copies;
  for (const auto& [_, t] : params) param_copies.push_back(t.clone());
  for (const auto& [_, t] : grads) grad_copies.push_back(t.clone());
  const std::vector<bool> modes = training_modes(*n.root);
  const std::vector<std::string> names = type_names(*n.root);
  CHECK(std::count(modes.begin(), modes.end(), false) == 2);

  nn::ModulePtr cu = nn::convert(n.root, cudnn::backend);
  CHECK(training_modes(*cu) == modes);
  auto check_same = [&](nn::Module& m, bool on_gpu) {
    const auto p = m.namedParameters(), g = m.namedGradParameters();
    REQUIRE(p.size() == params.size());
    REQUIRE(g.size() == grads.size());
    for (size_t i = 0; i < p.size(); ++i) {
      INFO(p[i].first);
      CHECK(p[i].first == params[i].first);
      CHECK(p[i].second.is_cuda() == on_gpu);
      CHECK(g[i].second.is_cuda() == on_gpu);
      CHECK(max_abs_diff(p[i].second, param_copies[i]) == 0);
      CHECK(max_abs_diff(g[i].second, grad_copies[i]) == 0);
    }
  };
  check_same(*cu, true);

  nn::ModulePtr back = nn::convert(cu, nn::backend);
  CHECK(type_names(*back) == names);
  CHECK(training_modes(*back) == modes);
  check_same(*back, false);
  // the parameters came back to the CPU tensors' values, not only close to them
  const auto p = back->namedParameters();
  for (size_t i = 0; i < p.size(); ++i) CHECK(p[i].second.dtype() == params[i].second.dtype());
}

TEST_CASE("a partly converted network (one Linear excluded in the middle) trains one SGD step as the nn network") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Net ref = build(), mixed = build();
  mixed.root->loadStateDict(ref.root->stateDict());
  const nn::Module* keep = mixed.middleLinear.get();
  nn::ModulePtr net = nn::convert(mixed.root, cudnn::backend, [&](const nn::Module& m) { return &m == keep; });
  nn::CriterionPtr mse_cu = nn::convert(std::make_shared<nn::MSECriterion>(), cudnn::backend);
  CHECK(mse_cu->type_name() == "cudnn.MSECriterion");
  nn::MSECriterion mse;

  nn::SGD sgd_ref(*ref.root, 0.1, 0.9);
  nn::SGD sgd_cu(*net, 0.1, 0.9);  // parameters on both devices: each updates where it lives
  Generator gen(4403);
  for (int step = 0; step < 2; ++step) {
    INFO("step ", step);
    const Tensor x = uniform({5, 6}, -1, 1, gen), t = uniform({5, 4, 4}, -1, 1, gen);
    sgd_ref.zeroGrad();
    sgd_cu.zeroGrad();
    manual_seed(100 + step);  // the same dropout mask on both devices
    const Tensor y = ref.root->forward(x);
    const double loss = mse.forward(y, t);
    ref.root->backward(x, mse.backward(y, t));
    manual_seed(100 + step);
    const Tensor yc = net->forward(x.to(gpu));
    const double loss_cu = mse_cu->forward(yc, t.to(gpu));
    net->backward(x.to(gpu), mse_cu->backward(yc, t.to(gpu)));
    CHECK(yc.is_cuda());
    CHECK(max_rel_error(yc, y) < 1e-5);
    CHECK(loss_cu == doctest::Approx(loss).epsilon(1e-5));
    sgd_ref.step();
    sgd_cu.step();
    const auto pr = ref.root->namedParameters(), pc = net->namedParameters();
    REQUIRE(pr.size() == pc.size());
    for (size_t i = 0; i < pr.size(); ++i) {
      INFO(pr[i].first);
      CHECK(pc[i].second.is_cuda() == (pc[i].first.rfind("2.0.0.", 0) != 0));  // the excluded Linear stays on the CPU
      CHECK(max_rel_error(pc[i].second, pr[i].second) < 1e-5);
    }
  }
}

TEST_CASE("converting a partly converted network again leaves the twins' GPU tensors where they are") {
  // nn modules compute on the CPU only (their to(cuda) is a no-op), so the GPU tensors that can
  // already be in place are those of twins: a second convert() must not copy them.
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3), std::make_shared<nn::SpatialBatchNormalization>(4),
      std::make_shared<nn::View>(4 * 3 * 3), std::make_shared<nn::Linear>(4 * 3 * 3, 2)});
  nn::ModulePtr partly =
      nn::convert(net, cudnn::backend, [](const nn::Module& m) { return m.type_name() == "nn.Linear"; });
  const auto before = partly->stateDict();
  REQUIRE(before.size() ==
          9);  // conv weight/bias, BN weight/bias/running mean/var/num_batches_tracked, Linear weight/bias
  CHECK(before.at("0.weight").is_cuda());
  CHECK(before.at("3.weight").is_cpu());
  nn::ModulePtr full = nn::convert(partly, cudnn::backend);
  for (const auto& [name, t] : full->stateDict()) {
    INFO(name);
    CHECK(t.is_cuda());
    if (name.rfind("3.", 0) == 0) {
      CHECK(tensor::max_abs_diff(t.to(Device::cpu()), before.at(name)) == 0);  // moved once, unchanged
    } else {
      CHECK(t.shares_storage(before.at(name)));
    }
  }
}

namespace {
// A user's pair as an extension would write it (issue 27): nn computes on the CPU, the twin on
// CUDA devices (here with the tensor layer's ops), both y = x * weight.
class UserGain : public nn::Module {
 public:
  UserGain() : weight(tensor::full({1}, 3.0)), gradWeight(tensor::zeros({1})) {}
  UserGain(UserGain&&) = default;
  const nn::Tensor& updateOutput(const nn::Tensor& input) override {
    output = input.mul(weight.item());
    return output;
  }
  const nn::Tensor& updateGradInput(const nn::Tensor&, const nn::Tensor& gradOutput) override {
    gradInput = gradOutput.mul(weight.item());
    return gradInput;
  }
  static constexpr std::string_view kTypeName = "test.Gain";
  std::string type_name() const override { return std::string(kTypeName); }
  nn::Tensor weight, gradWeight;

 protected:
  void visitState(nn::StateVisitor& v) override { v.parameter("weight", weight, gradWeight); }
};
class UserCudaGain : public UserGain {
 public:
  explicit UserCudaGain(UserGain&& m) : UserGain(std::move(m)) {}
  static constexpr std::string_view kTypeName = "test.cuda.Gain";
  std::string type_name() const override { return std::string(kTypeName); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
  bool computesOn(tensor::Device d) const override { return d.is_cuda(); }
};
}  // namespace

TEST_CASE("a registered user pair converts to its GPU twin and back, its state moving to the device and back") {
  nn::register_twin<UserGain, UserCudaGain>();
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 2));
  net->add(std::make_shared<UserGain>());
  nn::ConvertReport report;
  nn::convert(net, cudnn::backend, {}, &report);
  CHECK(net->get(1)->type_name() == "test.cuda.Gain");
  CHECK(net->get(1)->stateDict().at("weight").is_cuda());
  CHECK(report.unknown.empty());
  CHECK(report.converted.size() == 2);
  const tensor::Tensor x = tensor::ones({4, 3}, tensor::DType::Float32, tensor::Device::cuda(0));
  const tensor::Tensor y = net->forward(x);
  CHECK(y.is_cuda());
  nn::convert(net, nn::backend);
  CHECK(net->get(1)->type_name() == "test.Gain");
  CHECK(net->get(1)->stateDict().at("weight").is_cpu());
  CHECK(net->get(1)->stateDict().at("weight").item() == 3.0);
}
