// TwinCheck.cpp
#include "testkit/TwinCheck.h"

#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>

#include <unistd.h>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "tensor/Cuda.h"
#include "tensor/Format.h"
#include "tensor/Safetensors.h"
#include "testkit/Compare.h"
#include "testkit/Inputs.h"

namespace nn::testkit {

using tensor::Device;
using tensor::DType;
using tensor::num_str;
using tensor::Tensor;

TwinTolerance TwinTolerance::for_dtype(DType dt) {
  switch (dt) {
    case DType::Float64:
      return {1e-10, 1e-9};
    case DType::Float16:
      return {4e-3, 1e-2};
    case DType::BFloat16:
      return {3e-2, 6e-2};
    default:
      return {1e-5, 1e-4};
  }
}

namespace {

std::string subject_of(const nn::Module& twin, const nn::Module& reference, const TwinOptions& o,
                       const std::string& what) {
  return twin.str() + " vs " + reference.str() + " in " + std::string(tensor::name(o.dtype)) + " on " + o.device.str() +
         what;
}

// "cudnn.X" for "nn.X"; a container without a twin (nn.Sequential) holding twins keeps its nn
// type. A user's pair may be named anyhow: nothing to check by name.
bool is_twin_of(const nn::Module& twin, nn::Module& reference) {
  const std::string r = reference.type_name();
  if (r.rfind("nn.", 0) != 0) return true;
  if (twin.type_name() == "cudnn" + r.substr(2)) return true;
  return reference.children() && twin.type_name() == r;
}

// The reference in float64; the twin on the device in the dtype, then with the reference's
// state (converted first, then loaded: a float64 twin then holds the reference's exact
// values), in the reference's mode.
void load_reference(nn::Module& reference, nn::Module& twin, const TwinOptions& o) {
  reference.to(DType::Float64);
  twin.to(o.device);
  twin.to(o.dtype);
  twin.loadStateDict(reference.stateDict());
  if (reference.isTraining())
    twin.train();
  else
    twin.evaluate();
}

// load_reference, gradients cleared.
void prepare(nn::Module& reference, nn::Module& twin, const TwinOptions& o) {
  load_reference(reference, twin, o);
  reference.zeroGradParameters();
  twin.zeroGradParameters();
}

using Comparison = std::function<Report(const std::string&, const Tensor&, const Tensor&, double)>;

// Output, gradInput, every parameter gradient and every buffer of the two modules, after one
// forward (same seed) and one backward (same random gradOutput) each.
void compare_passes(Report& r, nn::Module& reference, nn::Module& twin, const Tensor& x, const Tensor& xt,
                    const TwinOptions& o, uint64_t seed, const Comparison& cmp) {
  const TwinTolerance tol = o.tol();
  tensor::manual_seed(99);
  const Tensor y = reference.forward(x.clone()).clone();
  tensor::manual_seed(99);
  const Tensor yt = twin.forward(xt).clone();
  r.merge(cmp("output", yt, y, tol.forward));
  tensor::Generator gen(seed);
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const Tensor gx = reference.backward(x.clone(), g.clone()).clone();
  const Tensor gxt = twin.backward(xt, g.to(o.device, o.dtype)).clone();
  r.merge(cmp("gradInput", gxt, gx, tol.backward));
  const auto rp = reference.namedGradParameters(), tp = twin.namedGradParameters();
  if (!r.expect(rp.size() == tp.size(),
                "the twin has " + std::to_string(tp.size()) + " parameters, nn " + std::to_string(rp.size())))
    return;
  for (size_t i = 0; i < rp.size(); ++i)
    r.merge(cmp("grad of " + rp[i].first, tp[i].second, rp[i].second, tol.backward));
  const auto rb = reference.namedBuffers(), tb = twin.namedBuffers();
  if (!r.expect(rb.size() == tb.size(),
                "the twin has " + std::to_string(tb.size()) + " buffers, nn " + std::to_string(rb.size())))
    return;
  for (size_t i = 0; i < rb.size(); ++i) r.merge(cmp(rb[i].first, tb[i].second, rb[i].second, tol.forward));
}

// The criterion's target as each side takes it: a target of the input's dtype (MSE's) goes
// with the input (float64 for nn, the twin's dtype for the twin); class targets are kept.
std::pair<Tensor, Tensor> targets(const Tensor& input, const Tensor& target, const TwinOptions& o) {
  const bool like_input = target.dtype() == input.dtype();
  return {like_input ? target.to(DType::Float64) : target,
          like_input ? target.to(o.device, o.dtype) : target.to(o.device)};
}

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf
int kind_of(double v) { return std::isnan(v) ? 1 : std::isinf(v) ? (v > 0 ? 2 : 3) : 0; }

}  // namespace

Report check_twin(nn::Module& reference, nn::Module& twin, const Tensor& input, const TwinOptions& o) {
  Report r;
  r.subject = subject_of(twin, reference, o, o.noncontiguous ? ", non-contiguous input" : "");
  r.expect(is_twin_of(twin, reference), twin.type_name() + " is not the twin of " + reference.type_name());
  prepare(reference, twin, o);
  const Tensor x = input.to(DType::Float64);
  Tensor xt = x.to(o.device, o.dtype);
  if (o.noncontiguous) xt = noncontiguous_copy(xt, 0, 1);  // the layout these checks always used, where it is one
  compare_passes(r, reference, twin, x, xt, o, 4242, compare_close);

  // state round trip through safetensors bytes, into the twin itself
  const auto bytes = tensor::serialize_safetensors(twin.stateDict());
  const auto loaded = tensor::parse_safetensors(bytes.data(), bytes.size(), "twin state");
  const auto before = twin.stateDict();
  twin.loadStateDict(loaded.tensors);
  for (const auto& [name, t] : twin.stateDict())
    r.expect(tensor::max_abs_diff(t, before.at(name)) == 0, name + " changed in a safetensors round trip");
  return r;
}

Report check_twin_criterion(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input, const Tensor& target,
                            const TwinOptions& o) {
  Report r;
  r.subject = twin.str() + " vs " + reference.str() + " in " + std::string(tensor::name(o.dtype));
  if (reference.type_name().rfind("nn.", 0) == 0)
    r.expect(twin.type_name() == "cudnn" + reference.type_name().substr(2),
             twin.type_name() + " is not the twin of " + reference.type_name());
  const TwinTolerance tol = o.tol();
  reference.to(DType::Float64);
  twin.to(o.device);
  twin.to(o.dtype);
  const Tensor x = input.to(DType::Float64);
  const Tensor xt = x.to(o.device, o.dtype);
  const auto [t, tt] = targets(input, target, o);
  const double loss = reference.forward(x, t);
  const double loss_t = twin.forward(xt, tt);
  // doctest's Approx: |a - b| <= eps * (scale + max(|a|, |b|)), scale 1
  const double bound = tol.forward * 10 * (1 + std::max(std::abs(loss), std::abs(loss_t)));
  r.expect(std::abs(loss_t - loss) <= bound, "loss " + num_str(loss_t) + ", nn " + num_str(loss));
  r.merge(compare_close("gradInput", twin.backward(xt, tt), reference.backward(x, t), tol.backward));
  return r;
}

namespace {
// Both backwards on gradOutput g (float64 on the CPU; the twin gets it in its dtype and device):
// gradInput and every parameter gradient compared kind by kind into r; false where the
// parameter lists differ.
bool backward_nonfinite(Report& r, nn::Module& reference, nn::Module& twin, const Tensor& x, const Tensor& xt,
                        const Tensor& g, const TwinOptions& o) {
  const Tensor gx = reference.backward(x.clone(), g.clone()).clone();
  const Tensor gxt = twin.backward(xt.clone(), g.to(o.device, o.dtype)).clone();
  r.merge(compare_nonfinite("gradInput", gxt, gx, o.tol().backward));
  const auto rp = reference.namedGradParameters(), tp = twin.namedGradParameters();
  if (!r.expect(rp.size() == tp.size(), "different numbers of parameters")) return false;
  for (size_t i = 0; i < rp.size(); ++i)
    r.merge(compare_nonfinite("grad of " + rp[i].first, tp[i].second, rp[i].second, o.tol().backward));
  return true;
}
}  // namespace

Report check_twin_nonfinite(nn::Module& reference, nn::Module& twin, const Tensor& input,
                            const std::vector<int64_t>& positions, const TwinOptions& o) {
  Report r;
  r.subject = subject_of(twin, reference, o, " with NaN and Inf inputs");
  prepare(reference, twin, o);
  const Tensor x = with_nonfinite(input.to(Device::cpu(), DType::Float64), positions);
  const Tensor xt = x.to(o.device, o.dtype);
  // clones: an in-place twin must not overwrite the input the next pass reads
  const Tensor xt_fwd = xt.clone();
  tensor::manual_seed(99);
  const Tensor y = reference.forward(x.clone()).clone();
  tensor::manual_seed(99);
  const Tensor yt = twin.forward(xt_fwd).clone();
  r.merge(compare_nonfinite("output", yt, y, o.tol().forward));
  tensor::Generator gen(4243);
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, DType::Float64);
  if (!backward_nonfinite(r, reference, twin, x, xt, g, o)) return r;
  const auto rb = reference.namedBuffers(), tb = twin.namedBuffers();
  if (!r.expect(rb.size() == tb.size(), "different numbers of buffers")) return r;
  for (size_t i = 0; i < rb.size(); ++i)
    r.merge(compare_nonfinite(rb[i].first, tb[i].second, rb[i].second, o.tol().forward));
  return r;
}

Report check_twin_nonfinite_gradient(nn::Module& reference, nn::Module& twin, const Tensor& input,
                                     const std::vector<int64_t>& positions, const TwinOptions& o) {
  Report r;
  r.subject = subject_of(twin, reference, o, " with NaN and Inf in gradOutput");
  prepare(reference, twin, o);
  const Tensor x = input.to(Device::cpu(), DType::Float64);
  const Tensor xt = x.to(o.device, o.dtype);
  tensor::manual_seed(99);
  const Tensor y = reference.forward(x.clone()).clone();
  tensor::manual_seed(99);
  twin.forward(xt.clone());
  tensor::Generator gen(4244);
  const Tensor g = with_nonfinite(tensor::uniform(y.sizes(), -1, 1, gen, DType::Float64), positions);
  backward_nonfinite(r, reference, twin, x, xt, g, o);
  return r;
}

Report check_twin_criterion_nonfinite(nn::Criterion& reference, nn::Criterion& twin, const Tensor& input,
                                      const Tensor& target, const std::vector<int64_t>& positions,
                                      const TwinOptions& o) {
  Report r;
  r.subject =
      twin.str() + " vs " + reference.str() + " in " + std::string(tensor::name(o.dtype)) + " with NaN and Inf inputs";
  reference.to(DType::Float64);
  twin.to(o.device);
  twin.to(o.dtype);
  const Tensor x = with_nonfinite(input.to(Device::cpu(), DType::Float64), positions);
  const Tensor xt = x.to(o.device, o.dtype);
  const auto [t, tt] = targets(input, target, o);
  const double loss = reference.forward(x, t);
  const double loss_t = twin.forward(xt, tt);
  const std::string losses = "loss " + num_str(loss_t) + ", nn " + num_str(loss);
  r.expect(kind_of(loss_t) == kind_of(loss), losses + ": not the same kind (NaN / +Inf / -Inf / finite)");
  if (kind_of(loss) == 0 && kind_of(loss_t) == 0) {
    const double bound = o.tol().forward * 10 * (1 + std::max(std::abs(loss), std::abs(loss_t)));
    r.expect(std::abs(loss_t - loss) <= bound, losses);
  }
  r.merge(compare_nonfinite("gradInput", twin.backward(xt, tt), reference.backward(x, t), o.tol().backward));
  return r;
}

Report check_twin_empty_batch(nn::Module& reference, nn::Module& twin, const Tensor& emptyInput, const TwinOptions& o) {
  Report r;
  r.subject = subject_of(twin, reference, o, ", empty batch " + tensor::shape_str(emptyInput.sizes()));
  if (emptyInput.numel() != 0)
    throw tensor::Error("testkit::check_twin_empty_batch: expected an input with no elements, got " +
                        emptyInput.description());
  load_reference(reference, twin, o);
  // parameter gradients that are not zero, so "left unchanged" is seen
  tensor::Generator gen(9);
  const auto rg = reference.gradParameters(), tg = twin.gradParameters();
  if (!r.expect(rg.size() == tg.size(), "different numbers of parameters")) return r;
  std::vector<Tensor> before;
  for (size_t i = 0; i < rg.size(); ++i) {
    Tensor(rg[i]).copy_(tensor::uniform(rg[i].sizes(), -1, 1, gen, DType::Float64));
    Tensor(tg[i]).copy_(rg[i].to(o.device, tg[i].dtype()));
    before.push_back(rg[i].clone());
  }
  const Tensor x = emptyInput.to(DType::Float64), xt = emptyInput.to(o.device, o.dtype);
  const tensor::Shape want = reference.forward(x).sizes();
  auto run = [&](const char* what, const std::function<tensor::Shape()>& f) -> tensor::Shape {
    try {
      return f();
    } catch (const std::exception& e) {
      r.expect(false, std::string(what) + " threw: " + e.what());
      return {-1};
    }
  };
  const tensor::Shape got = run("forward", [&] { return twin.forward(xt).sizes(); });
  r.expect(got == want, "output shape " + tensor::shape_str(got) + ", nn " + tensor::shape_str(want));
  if (!reference.isTraining()) return r;  // backward after an evaluation forward is an error for some (the RNNs)
  const tensor::Shape wantGrad = reference.backward(x, tensor::zeros(want, DType::Float64)).sizes();
  const tensor::Shape gotGrad =
      run("backward", [&] { return twin.backward(xt, tensor::zeros(want, o.dtype, o.device)).sizes(); });
  r.expect(gotGrad == wantGrad,
           "gradInput shape " + tensor::shape_str(gotGrad) + ", nn " + tensor::shape_str(wantGrad));
  r.expect(wantGrad == x.sizes(), "nn's gradInput shape " + tensor::shape_str(wantGrad) + " is not the input's");
  const auto pr = reference.namedGradParameters(), pt = twin.namedGradParameters();
  for (size_t i = 0; i < pr.size(); ++i) {
    r.expect(tensor::max_abs_diff(pr[i].second, before[i]) == 0, "nn changed grad of " + pr[i].first);
    r.expect(!tensor::has_nonfinite(pt[i].second) &&
                 tensor::max_abs_diff(pt[i].second.to(Device::cpu(), DType::Float64),
                                      before[i].to(pt[i].second.dtype()).to(DType::Float64)) == 0,
             "the twin changed grad of " + pr[i].first);
  }
  return r;
}

Report check_steady_state(nn::Module& twin, const Tensor& input) {
  Report r;
  r.subject = twin.str() + " steady state on " + input.description();
  if (!input.is_cuda())
    throw tensor::Error("testkit::check_steady_state: expected an input on a CUDA device, got " + input.description());
  tensor::Generator gen(3);
  // gradOutput takes the output's shape (pooling changes it), so one forward comes first
  const Tensor g = tensor::uniform(twin.forward(input).sizes(), -1, 1, gen, input.dtype(), input.device());
  for (int i = 0; i < 2; ++i) {
    twin.forward(input);
    twin.backward(input, g);
  }
  const uint64_t before = tensor::cuda::memory_stats(input.device().index).device_mallocs;
  for (int i = 0; i < 3; ++i) {
    twin.forward(input);
    twin.backward(input, g);
  }
  const uint64_t after = tensor::cuda::memory_stats(input.device().index).device_mallocs;
  r.expect(after == before,
           std::to_string(after - before) + " device allocation(s) in three warm forward + backward passes");
  return r;
}

Report check_convert_roundtrip(nn::ModulePtr module, const Tensor& input, const std::string& twinType) {
  Report r;
  r.subject = "convert round trip of " + module->str();
  const std::string nn_name = module->type_name();
  const size_t dot = nn_name.find('.');
  const std::string twin_name = !twinType.empty()          ? twinType
                                : dot == std::string::npos ? "cudnn." + nn_name
                                                           : "cudnn" + nn_name.substr(dot);
  module->to(DType::Float32);
  const Tensor x = input.to(Device::cpu(), DType::Float32);
  tensor::manual_seed(7);
  const Tensor y_nn = module->forward(x.clone()).clone();
  const auto state_before = module->stateDict();
  const bool training = module->isTraining();

  nn::ModulePtr cu = nn::convert(module, cudnn::backend);
  if (!r.expect(cu->type_name() == twin_name, "converted to " + cu->type_name() + ", want " + twin_name)) return r;
  r.expect(cu->isTraining() == training, "the training mode changed in convert to cudnn");
  for (const auto& [name, t] : cu->stateDict()) {
    r.expect(t.is_cuda(), name + " is not on the GPU after convert");
    r.expect(tensor::max_abs_diff(t.cpu(), state_before.at(name)) == 0, name + " changed in convert to cudnn");
  }
  tensor::manual_seed(7);
  const Tensor y_cu = cu->forward(x.to(Device::cuda())).clone();
  const double err = tensor::rel_norm_error(y_cu, y_nn);
  r.expect(err < 1e-3, "output after convert: relative error " + num_str(err) + " > 1e-3");  // TF32 may be on

  const auto gpu_state = cu->stateDict();
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  r.expect(back->type_name() == nn_name, "converted back to " + back->type_name() + ", want " + nn_name);
  r.expect(back->isTraining() == training, "the training mode changed in convert back");
  // cudnn -> nn loses nothing either: the state as the twin's forward left it (a training
  // forward counts a batch in num_batches_tracked, whatever the momentum)
  for (const auto& [name, t] : back->stateDict()) {
    r.expect(t.is_cpu(), name + " is not on the CPU after convert back");
    r.expect(tensor::max_abs_diff(t, gpu_state.at(name).cpu()) == 0, name + " changed in convert back");
  }
  // already on the GPU: converting a cudnn module to cudnn again keeps the very storage
  nn::ModulePtr again = nn::convert(nn::convert(back, cudnn::backend), cudnn::backend);
  const auto s1 = again->stateDict();
  nn::ModulePtr same = nn::convert(again, cudnn::backend);
  for (const auto& [name, t] : same->stateDict())
    r.expect(t.shares_storage(s1.at(name)), name + " was copied converting a module already on the GPU");
  return r;
}

Report check_criterion_convert_roundtrip(nn::CriterionPtr criterion, const Tensor& input, const Tensor& target) {
  Report r;
  r.subject = "convert round trip of " + criterion->str();
  const std::string nn_name = criterion->type_name();
  criterion->to(DType::Float32);
  const Tensor x = input.to(DType::Float32);
  const Tensor t = tensor::is_floating(target.dtype()) ? target.to(DType::Float32) : target;
  const double loss = criterion->forward(x, t);
  const Tensor grad = criterion->backward(x, t).clone();
  const auto state_before = criterion->stateDict();

  nn::CriterionPtr cu = nn::convert(criterion, cudnn::backend);
  r.expect(cu->type_name() == "cudnn" + nn_name.substr(2), "converted to " + cu->type_name());
  for (const auto& [name, s] : cu->stateDict()) r.expect(s.is_cuda(), name + " is not on the GPU after convert");
  const Device gpu = Device::cuda();
  const double loss_cu = cu->forward(x.to(gpu), t.to(gpu));
  r.expect(std::abs(loss_cu - loss) <= 1e-5 * (1 + std::max(std::abs(loss), std::abs(loss_cu))),
           "loss after convert " + num_str(loss_cu) + ", nn " + num_str(loss));
  const Tensor grad_cu = cu->backward(x.to(gpu), t.to(gpu));
  r.expect(grad_cu.is_cuda(), "gradInput after convert is not on the GPU");
  r.expect(tensor::max_rel_error(grad_cu, grad) < 1e-5, "gradInput after convert differs from nn's");
  r.expect(nn::convert(cu, cudnn::backend) == cu, "converting a cudnn criterion to cudnn made a new object");

  nn::CriterionPtr back = nn::convert(cu, nn::backend);
  r.expect(back->type_name() == nn_name, "converted back to " + back->type_name());
  for (const auto& [name, s] : back->stateDict()) {
    r.expect(s.is_cpu(), name + " is not on the CPU after convert back");
    r.expect(tensor::max_abs_diff(s, state_before.at(name)) == 0, name + " changed in the round trip");
  }
  r.expect(back->forward(x, t) == loss, "the loss changed in the round trip");
  return r;
}

namespace {
// Types and modes of a network, depth first: "nn.Sequential(training)[nn.Linear(training)...]".
std::string shape_of(nn::Module& m) {
  std::string s = m.type_name() + (m.isTraining() ? "(training)" : "(evaluation)");
  if (auto* kids = m.children()) {
    s += "[";
    for (auto& k : *kids) s += (k ? shape_of(*k) : "null") + " ";
    s += "]";
  }
  return s;
}
}  // namespace

Report check_model_file_roundtrip(nn::Module& net, const Tensor& input) {
  Report r;
  r.subject = "model file round trip of " + net.str();
  static std::atomic<int> counter{0};
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("cudnn-nn-testkit-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  const std::string stem = (dir / "model").string();
  nn::ModulePtr loaded;
  try {
    nn::save_model(net, stem);
    loaded = nn::load_model(stem);
  } catch (const std::exception& e) {
    std::filesystem::remove_all(dir);
    r.expect(false, std::string("save_model / load_model threw: ") + e.what());
    return r;
  }
  std::filesystem::remove_all(dir);
  r.expect(shape_of(*loaded) == shape_of(net), "loaded " + shape_of(*loaded) + ", saved " + shape_of(net));
  const auto saved = net.stateDict(), back = loaded->stateDict();
  r.expect(saved.size() == back.size(), "the loaded network has " + std::to_string(back.size()) +
                                            " tensors, the saved " + std::to_string(saved.size()));
  for (const auto& [name, t] : saved) {
    const auto it = back.find(name);
    if (!r.expect(it != back.end(), name + " is missing after load")) continue;
    r.expect(it->second.dtype() == t.dtype() && tensor::max_abs_diff(it->second.cpu(), t.cpu()) == 0,
             name + " differs after load: " + it->second.description() + ", saved " + t.description());
  }
  loaded->to(input.device());
  tensor::manual_seed(11);
  const Tensor y = net.forward(input.clone()).clone();
  tensor::manual_seed(11);
  const Tensor y2 = loaded->forward(input.clone()).clone();
  r.merge(compare_close("output after load", y2, y, 1e-6));
  return r;
}

}  // namespace nn::testkit
