// GradCheck.cpp
#include "testkit/GradCheck.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "nn/Container.h"
#include "tensor/Format.h"
#include "tensor/Safetensors.h"

namespace nn::testkit {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

namespace {

std::string index_str(const Shape& shape, int64_t flat) {
  // appended rather than "[" + ...: GCC 12 warns (-Wrestrict, a false positive) on the temporary
  std::string s = "[";
  s += tensor::join(tensor::unravel(shape, flat), " x ");
  s += "]";
  return s;
}

std::vector<int64_t> sample_indices(int64_t n, int64_t max_samples, tensor::Generator& gen) {
  std::vector<int64_t> out;
  if (n <= max_samples) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (int64_t i = 0; i < max_samples; ++i) out.push_back(gen.randint(n));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double dot(const Tensor& a, const Tensor& b) { return a.mul(b).sum().item(); }

void require(bool ok, const std::string& what) {
  if (!ok) throw tensor::Error("testkit::check_gradients: " + what);
}

// Where the entry of row-major position `flat` lies in `t`'s storage, from its data pointer.
int64_t storage_index(const Tensor& t, int64_t flat) {
  int64_t at = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    at += (flat % t.size(d)) * t.strides()[d];
    flat /= t.size(d);
  }
  return at;
}

// Perturbs `target` (a dense float64 CPU tensor the loss reads: row-major, or a channels-last
// filter) entry by entry and compares with `analytic`.
void check_tensor(const std::string& name, Tensor target, const Tensor& analytic, const std::function<double()>& loss,
                  const GradCheckOptions& o, tensor::Generator& gen, GradCheckReport& report) {
  require(target.dtype() == DType::Float64 && target.is_cpu(),
          "expected " + name + " float64 on the CPU, got " + target.description());
  require(target.is_non_overlapping_and_dense(), "expected " + name + " dense, got " + target.description());
  require(analytic.defined(), "expected a gradient of " + name + ", got none");
  require(analytic.sizes() == target.sizes(), "expected the gradient of " + name + " of its shape " +
                                                  tensor::shape_str(target.sizes()) + ", got " +
                                                  tensor::shape_str(analytic.sizes()));
  const std::vector<double> grad = analytic.contiguous().to_vector<double>();
  double* x = target.data<double>();
  for (int64_t i : sample_indices(target.numel(), o.max_samples, gen)) {
    double& entry = x[storage_index(target, i)];
    const double saved = entry;
    const double l0 = loss();
    entry = saved + o.eps;
    const double lp = loss();
    entry = saved - o.eps;
    const double lm = loss();
    entry = saved;
    if (std::abs(lp - 2 * l0 + lm) > o.kink_threshold * std::max(1.0, std::abs(l0))) {
      ++report.skipped;
      continue;
    }
    const double numeric = (lp - lm) / (2 * o.eps);
    const double err = std::abs(numeric - grad[i]) / std::max({std::abs(numeric), std::abs(grad[i]), 1.0});
    ++report.checked;
    if (err > report.max_error || std::isnan(err)) {
      report.max_error = std::isnan(err) ? INFINITY : err;
      std::ostringstream w;
      w << name << index_str(target.sizes(), i) << ": analytic " << grad[i] << ", numeric " << numeric;
      report.worst = w.str();
    }
  }
}

// The report's two expectations, once every tensor is checked.
void conclude(GradCheckReport& r, const GradCheckOptions& o) {
  std::ostringstream numbers;
  numbers << " (max error " << r.max_error << ", " << r.checked << " checked, " << r.skipped << " kinks skipped)";
  r.subject += numbers.str();
  r.expect(r.checked > 0, "no entry checked (" + std::to_string(r.skipped) + " kinks skipped)");
  std::ostringstream os;
  os << "max error " << r.max_error << " > tolerance " << o.tolerance << ", worst at " << r.worst;
  r.expect(r.max_error <= o.tolerance, os.str());
}

}  // namespace

std::string GradCheckReport::str() const {
  std::ostringstream os;
  os << "max error " << max_error << " (" << checked << " checked, " << skipped << " kinks skipped)";
  if (!worst.empty()) os << ", worst at " << worst;
  return os.str();
}

GradCheckReport check_gradients(nn::Module& module, const Tensor& input, const GradCheckOptions& o) {
  require(o.check_input || o.check_parameters,
          "expected check_input or check_parameters (or both), got neither: nothing to check");
  require(!o.check_input || input.dtype() == DType::Float64,
          "expected a float64 input (gradient checks run in float64; check_input = false checks the parameters "
          "alone, at an input of any dtype), got " +
              input.description());
  tensor::Generator gen(o.seed);
  Tensor x = input.contiguous().clone();
  auto forward = [&]() -> Tensor {
    tensor::manual_seed(o.seed);
    // a fresh copy each time: in-place modules overwrite their input
    return module.forward(x.clone()).clone();
  };
  const Tensor y0 = forward();
  const Tensor r = tensor::uniform(y0.sizes(), -1, 1, gen, DType::Float64);
  auto loss = [&]() { return dot(forward(), r); };

  module.zeroGradParameters();
  tensor::manual_seed(o.seed);
  Tensor x_in = x.clone();
  module.forward(x_in);
  // a copy: in-place modules (Torch's ReLU(true)) reuse gradOutput's storage for gradInput
  const Tensor& gx_out = module.backward(x_in, r.clone());
  // a parameter-only check does not read it (an Embedding leaves it undefined)
  const Tensor gx = o.check_input && gx_out.defined() ? gx_out.clone() : Tensor();
  std::vector<std::pair<std::string, Tensor>> grads;
  for (auto& [n, g] : module.namedGradParameters()) grads.emplace_back(n, g.clone());

  GradCheckReport report;
  report.subject = module.str() + (o.check_input ? " gradients" : " parameter gradients") + " at input " +
                   tensor::shape_str(input.sizes());
  if (o.check_input) check_tensor("input", x, gx, loss, o, gen, report);
  if (o.check_parameters) {
    auto params = module.namedParameters();
    for (size_t k = 0; k < params.size(); ++k) {
      check_tensor(params[k].first, params[k].second, grads[k].second, loss, o, gen, report);
    }
  }
  conclude(report, o);
  return report;
}

namespace {

// `flat`'s elements as a value of `like`'s structure and shapes (views of flat).
nn::Value unpack(const Tensor& flat, const nn::Value& like, int64_t& offset) {
  if (like.isTable()) {
    nn::Table items(like.size());
    for (size_t i = 0; i < like.size(); ++i) items[i] = unpack(flat, like[i], offset);
    return items;
  }
  if (!like.isTensor()) return {};
  const Tensor& t = like.tensorOrUndefined();
  Tensor v = flat.narrow(0, offset, t.numel()).view(t.sizes());
  offset += t.numel();
  return v;
}

// A value's tensors, flattened and joined (zeros where `like` has a tensor and v has nothing).
Tensor pack(const nn::Value& v, const nn::Value& like) {
  std::vector<Tensor> parts;
  std::function<void(const nn::Value&, const nn::Value&)> walk = [&](const nn::Value& a, const nn::Value& l) {
    if (l.isTable()) {
      for (size_t i = 0; i < l.size(); ++i) walk(a.isTable() && i < a.size() ? a[i] : nn::Value(), l[i]);
    } else if (l.isTensor()) {
      const Tensor& t = l.tensorOrUndefined();
      parts.push_back(a.isTensor() ? a.tensorOrUndefined().contiguous().reshape({-1})
                                   : tensor::zeros({t.numel()}, t.dtype(), t.device()));
    }
  };
  walk(v, like);
  if (parts.empty()) return tensor::zeros({0}, DType::Float64);
  return tensor::cat(parts, 0);
}

// A module of one flat tensor around one that takes and gives values, so the tensor checks
// above apply; its child is the module itself, so its parameters are checked too.
class Packed : public nn::Container {
 public:
  Packed(nn::Module& inner, nn::Value inputLike) : like_(std::move(inputLike)) {
    modules.push_back(nn::ModulePtr(&inner, [](nn::Module*) {}));
  }
  const Tensor& updateOutput(const Tensor& flat) override {
    int64_t at = 0;
    in_ = unpack(flat, like_, at);
    const nn::Value& out = modules[0]->forward(in_);
    outLike_ = out;
    output = pack(out, out);
    return output;
  }
  const Tensor& updateGradInput(const Tensor&, const Tensor& g) override {
    int64_t at = 0;
    gradInput = pack(modules[0]->updateGradInputValue(in_, unpack(g, outLike_, at)), like_);
    return gradInput;
  }
  void accGradParameters(const Tensor&, const Tensor& g, double scale) override {
    int64_t at = 0;
    modules[0]->accGradParametersValue(in_, unpack(g, outLike_, at), scale);
  }
  std::string type_name() const override { return "testkit.Packed"; }
  std::string str() const override { return modules[0]->str(); }

 protected:
  void backwardImpl(const Tensor&, const Tensor& g, double scale) override {
    int64_t at = 0;
    gradInput = pack(modules[0]->backward(in_, unpack(g, outLike_, at), scale), like_);
  }

 private:
  nn::Value like_, in_, outLike_;
};

}  // namespace

GradCheckReport check_gradients(nn::Module& module, const nn::Value& input, const GradCheckOptions& o) {
  Packed packed(module, input);
  return check_gradients(packed, pack(input, input), o);
}

GradCheckReport check_criterion_gradient(nn::Criterion& criterion, const Tensor& input, const Tensor& target,
                                         const GradCheckOptions& o) {
  tensor::Generator gen(o.seed);
  Tensor x = input.contiguous().clone();
  auto loss = [&]() { return criterion.forward(x, target); };
  criterion.forward(x, target);
  const Tensor gx = criterion.backward(x, target).clone();
  GradCheckReport report;
  report.subject = criterion.str() + " gradient at input " + tensor::shape_str(input.sizes());
  check_tensor("input", x, gx, loss, o, gen, report);
  conclude(report, o);
  return report;
}

Report check_accumulation(nn::Module& module, const Tensor& input) {
  Report report;
  report.subject = module.str() + " gradient accumulation";
  tensor::Generator gen(77);
  tensor::manual_seed(77);
  const Tensor y = module.forward(input.clone()).clone();
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, input.dtype(), input.device());
  auto grads_after = [&](const std::vector<double>& scales) {
    module.zeroGradParameters();
    for (double s : scales) {
      tensor::manual_seed(77);
      Tensor x = input.clone();
      module.forward(x);
      module.backward(x, g.clone(), s);
    }
    std::vector<Tensor> out;
    for (auto& t : module.gradParameters()) out.push_back(t.clone());
    return out;
  };
  const auto once = grads_after({1.0});
  const auto half = grads_after({0.5});
  const auto twice = grads_after({1.0, 1.0});
  const auto names = module.namedGradParameters();
  for (size_t k = 0; k < once.size(); ++k) {
    const double bound = 1e-9 * (1 + once[k].abs().max().item());
    report.expect(tensor::max_abs_diff(half[k].mul(2.0), once[k]) <= bound,
                  "grad of " + names[k].first + ": backward with scale 0.5, doubled, is not backward with scale 1");
    report.expect(tensor::max_abs_diff(twice[k], once[k].mul(2.0)) <= bound,
                  "grad of " + names[k].first + ": two backward calls do not accumulate twice one");
  }
  module.zeroGradParameters();
  for (auto& [name, t] : module.namedGradParameters())
    report.expect(t.numel() == 0 || t.abs().max().item() == 0,
                  "grad of " + name + ": not zero after zeroGradParameters()");
  return report;
}

Report check_state_roundtrip(nn::Module& module, nn::Module& fresh, const Tensor& input) {
  Report report;
  report.subject = module.str() + " state round trip";
  const auto bytes = tensor::serialize_safetensors(module.stateDict());
  const auto loaded = tensor::parse_safetensors(bytes.data(), bytes.size(), "roundtrip");
  fresh.loadStateDict(loaded.tensors);
  if (module.isTraining())
    fresh.train();
  else
    fresh.evaluate();
  tensor::manual_seed(5);
  Tensor xa = input.clone();
  const Tensor ya = module.forward(xa).clone();
  tensor::manual_seed(5);
  Tensor xb = input.clone();
  const Tensor yb = fresh.forward(xb).clone();
  report.expect(tensor::max_abs_diff(ya, yb) == 0, "output differs after the state is loaded");
  const Tensor g = tensor::ones(ya.sizes(), ya.dtype(), ya.device());
  module.zeroGradParameters();
  fresh.zeroGradParameters();
  const Tensor gxa = module.backward(xa, g.clone()).clone();  // copies: in-place modules overwrite g
  report.expect(tensor::max_abs_diff(gxa, fresh.backward(xb, g.clone())) == 0, "gradInput differs");
  const auto ga = module.namedGradParameters(), gb = fresh.namedGradParameters();
  if (!report.expect(ga.size() == gb.size(), "the modules have different numbers of parameters")) return report;
  for (size_t k = 0; k < ga.size(); ++k)
    report.expect(tensor::max_abs_diff(ga[k].second, gb[k].second) == 0, "grad of " + ga[k].first + " differs");
  return report;
}

}  // namespace nn::testkit
