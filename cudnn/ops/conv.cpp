// conv.cpp: ConvPlan's interface and the functional ops, Theano's dnn_conv family. The search
// behind the passes is conv_search.cpp, the bias passes conv_bias.cpp (conv_plan.h).
#include "cudnn/ops/conv.h"

#include "cudnn/core/Opaque.h"
#include "cudnn/ops/conv_plan.h"
#include "tensor/EnumTable.h"

template class cudnn::detail::Opaque<cudnn::ConvPlan::Impl>;

namespace cudnn {

ConvChoices ConvChoices::parse(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data,
                               bool fastest) {
  ConvChoices c;
  auto one = [&](ConvPass pass, const std::string& name) {
    if (!name.empty()) c.mode[static_cast<int>(pass)] = AlgoSetting::parse(pass, name);
  };
  one(ConvPass::Forward, fwd);
  one(ConvPass::BackwardFilter, bwd_filter);
  one(ConvPass::BackwardData, bwd_data);
  if (fastest) c.fastest = true;  // off: the global flag decides
  return c;
}

void ConvPlan::setChoices(const ConvChoices& c) {
  if (impl_->choices.mode != c.mode) {
    impl_->choices.mode = c.mode;
    for (auto& s : impl_->state) s = conv_detail::PassState{};
  }
  setFastest(c.fastest);
}

void ConvPlan::setMode(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data) {
  ConvChoices c = ConvChoices::parse(fwd, bwd_filter, bwd_data, false);
  c.fastest = impl_->choices.fastest;
  setChoices(c);
}

void ConvPlan::resetMode() {
  impl_->choices = ConvChoices{};
  for (auto& s : impl_->state) s = conv_detail::PassState{};
}

void ConvPlan::setFastest(std::optional<bool> on) {
  if (impl_->choices.fastest == on) return;
  impl_->choices.fastest = on;
  for (auto& s : impl_->state) s.valid = false;
}

void ConvPlan::setPrecision(std::optional<Precision> p) {
  impl_->precision = p;
  for (auto& s : impl_->state) s.valid = false;
}

const ConvChoices& ConvPlan::choices() const { return impl_->choices; }
std::string_view ConvPlan::mode(ConvPass pass) const {
  const std::optional<AlgoSetting>& m = impl_->choices.mode[static_cast<int>(pass)];
  return m ? m->name : "";
}
int ConvPlan::algorithm(ConvPass pass) const { return impl_->state[static_cast<int>(pass)].algo; }
size_t ConvPlan::workspace_bytes(ConvPass pass) const { return impl_->state[static_cast<int>(pass)].ws; }
std::vector<ConvPlan::Timing> ConvPlan::timings(ConvPass pass) const {
  return impl_->state[static_cast<int>(pass)].timings;
}
int ConvPlan::searches() const { return impl_->searches; }
int ConvPlan::fused_algorithm() const { return impl_->fused.valid ? impl_->fused.algo : -1; }

// A forward with an epilogue of the bias and act (Note [Fusion] in conv_search.cpp); false
// where act has no epilogue or no fused engine runs.
bool ConvPlan::forward_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const ConvSpec& g,
                             std::optional<Activation> act) {
  std::optional<cudnnPointwiseMode_t> mode;
  if (act) {
    mode = tensor::lookup(kPointwiseModes, *act);
    if (!mode) return false;  // no such epilogue: the caller computes apart
  }
  return impl_->execute<ConvPass::Forward>({x, w, y, x, y, w.sizes()}, g, 1, 0,
                                           {.bias = bias.defined() ? &bias : nullptr, .activation = mode});
}

void ConvPlan::forward(const Tensor& x, const Tensor& w, const Tensor& y, const ConvSpec& g, double alpha,
                       double beta) {
  impl_->execute<ConvPass::Forward>({x, w, y, x, y, w.sizes()}, g, alpha, beta);
}

void ConvPlan::backward_data(const Tensor& w, const Tensor& dy, const Tensor& dx, const ConvSpec& g, double alpha,
                             double beta) {
  impl_->execute<ConvPass::BackwardData>({w, dy, dx, dx, dy, w.sizes()}, g, alpha, beta);
}

void ConvPlan::backward_filter(const Tensor& x, const Tensor& dy, const Tensor& dw, const ConvSpec& g, double alpha,
                               double beta) {
  impl_->execute<ConvPass::BackwardFilter>({x, dy, dw, x, dy, dw.sizes()}, g, alpha, beta);
}

// ------------------------------------------------------------------------------ functional

ConvSpec conv_spec(const ConvParams& p, const Shape& kerns) {
  ConvSpec g;
  g.nd = static_cast<int>(kerns.size()) - 2;
  if (g.nd != 2 && g.nd != 3) {
    throw tensor::Error("cudnn::conv: expected 4-d or 5-d kernels, got " + tensor::shape_str(kerns));
  }
  auto per_dim = [&](const std::vector<int>& v, const char* name, nn::Dims& out, int lo) {
    if (v.empty()) return;
    if (static_cast<int>(v.size()) != g.nd) {
      throw tensor::Error(std::string("cudnn::conv: ") + name + " needs " + std::to_string(g.nd) + " values, got " +
                          std::to_string(v.size()));
    }
    for (int i = 0; i < g.nd; ++i) {
      if (v[i] < lo) throw tensor::Error(std::string("cudnn::conv: ") + name + " must be >= " + std::to_string(lo));
      out[g.first() + i] = v[i];
    }
  };
  per_dim(p.subsample, "subsample", g.stride, 1);
  per_dim(p.dilation, "dilation", g.dilation, 1);
  for (int i = 0; i < g.nd; ++i) {
    const int d = g.first() + i;
    const int k = static_cast<int>(kerns[2 + i]);
    g.k[d] = k;
    switch (p.border_mode.kind) {
      case BorderMode::Kind::Valid:
        g.pad[d] = 0;
        break;
      case BorderMode::Kind::Full:
        g.pad[d] = g.dilation[d] * (k - 1);  // in int64: no int overflow for huge dilations
        break;
      case BorderMode::Kind::Half:
        g.pad[d] = g.dilation[d] * (k - 1) / 2;
        break;
      case BorderMode::Kind::Explicit:
        break;
    }
  }
  if (p.border_mode.kind == BorderMode::Kind::Explicit) per_dim(p.border_mode.pad, "border_mode pads", g.pad, 0);
  if (p.groups < 1) throw tensor::Error("cudnn::conv: groups must be >= 1");
  g.groups = p.groups;
  g.cross_correlation = p.conv_mode == ConvParams::Mode::Cross;
  return g;
}

Shape conv_output_shape(const Shape& img, const Shape& kerns, const ConvSpec& g, const std::string& where) {
  if (img.size() != kerns.size() || static_cast<int>(img.size()) != g.nd + 2) {
    throw tensor::Error(where + "expected input and kernels of rank " + std::to_string(g.nd + 2) + ", got " +
                        tensor::shape_str(img) + " and " + tensor::shape_str(kerns));
  }
  if (img[1] != kerns[1] * g.groups || kerns[0] % g.groups != 0) {
    throw tensor::Error(where + "input " + tensor::shape_str(img) + " has " + std::to_string(img[1]) +
                        " channels, kernels " + tensor::shape_str(kerns) + " with groups " + std::to_string(g.groups) +
                        " expect " + std::to_string(kerns[1] * g.groups));
  }
  Shape out = {img[0], kerns[0]};
  for (int i = 0; i < g.nd; ++i) {
    const int d = g.first() + i;
    const int64_t span = g.dilation[d] * (kerns[2 + i] - 1) + 1;
    const int64_t padded = img[2 + i] + 2 * g.pad[d];
    if (padded < span) {
      throw tensor::Error(where + "input " + tensor::shape_str(img) + " is too small for kernels " +
                          tensor::shape_str(kerns) + " (padded size " + std::to_string(padded) + " < kernel extent " +
                          std::to_string(span) + ")");
    }
    out.push_back((padded - span) / g.stride[d] + 1);
  }
  return out;
}

namespace {
ConvPlan functional_plan(const ConvParams& p, ConvPass pass) {
  ConvPlan plan;
  if (!p.algo.empty()) {
    plan.setMode(pass == ConvPass::Forward ? p.algo : "", pass == ConvPass::BackwardFilter ? p.algo : "",
                 pass == ConvPass::BackwardData ? p.algo : "");
  }
  plan.setPrecision(p.precision);
  return plan;
}

// The functional ops' checks: their two tensors on one CUDA device with one floating dtype.
void check_pair(const std::string& where, const Tensor& a, const char* a_name, const Tensor& b, const char* b_name) {
  check_cuda(where, a, a_name);
  check_cuda(where, b, b_name);
  check_same(where, a, a_name, b, b_name);
}

// A gradient op's checks: `known` (kerns or img) and topgrad as above, and topgrad of the output
// shape the input img and the kernels kerns give; returns their ConvSpec. `given` names the shape
// the caller gave ("an input [..]" or "kernels [..]").
ConvSpec check_grad_op(const std::string& where, const Tensor& known, const char* known_name, const Tensor& topgrad,
                       const Shape& img, const Shape& kerns, const ConvParams& p, const std::string& given) {
  check_pair(where, known, known_name, topgrad, "topgrad");
  const ConvSpec g = conv_spec(p, kerns);
  const Shape expected = conv_output_shape(img, kerns, g, where);
  if (expected != topgrad.sizes()) {
    throw tensor::Error(where + "topgrad " + tensor::shape_str(topgrad.sizes()) + " does not match the output " +
                        tensor::shape_str(expected) + " of " + given);
  }
  return g;
}
}  // namespace

Tensor conv(const Tensor& img, const Tensor& kerns, const ConvParams& p) {
  const std::string where = "cudnn::conv: ";
  check_pair(where, img, "img", kerns, "kerns");
  const ConvSpec g = conv_spec(p, kerns.sizes());
  Tensor y = tensor::empty(conv_output_shape(img.sizes(), kerns.sizes(), g, where), img.dtype(), img.device());
  functional_plan(p, ConvPass::Forward).forward(img.contiguous(), kerns.contiguous(), y, g);
  return y;
}

Tensor conv_grad_input(const Tensor& kerns, const Tensor& topgrad, const Shape& img_shape, const ConvParams& p) {
  const ConvSpec g = check_grad_op("cudnn::conv_grad_input: ", kerns, "kerns", topgrad, img_shape, kerns.sizes(), p,
                                   "an input " + tensor::shape_str(img_shape));
  Tensor dx = tensor::empty(img_shape, kerns.dtype(), kerns.device());
  functional_plan(p, ConvPass::BackwardData).backward_data(kerns.contiguous(), topgrad.contiguous(), dx, g);
  return dx;
}

Tensor conv_grad_weight(const Tensor& img, const Tensor& topgrad, const Shape& kerns_shape, const ConvParams& p) {
  const ConvSpec g = check_grad_op("cudnn::conv_grad_weight: ", img, "img", topgrad, img.sizes(), kerns_shape, p,
                                   "kernels " + tensor::shape_str(kerns_shape));
  Tensor dw = tensor::empty(kerns_shape, img.dtype(), img.device());
  functional_plan(p, ConvPass::BackwardFilter).backward_filter(img.contiguous(), topgrad.contiguous(), dw, g);
  return dw;
}

}  // namespace cudnn
