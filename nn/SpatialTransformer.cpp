// SpatialTransformer.cpp: the container's plumbing (theta's shape, the two gradient paths)
// around the sampler of nn/kernels/SpatialTransformer.h.
#include "nn/SpatialTransformer.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/SpatialTransformer.h"

namespace nn {

namespace {
// See Note [Spatial transformer output bound] in SpatialTransformer.h
void check_out_size(const std::string& where, int64_t outH, int64_t outW) {
  constexpr int64_t kMax = SpatialTransformer::kMaxOutputPoints;
  // each side bounded first, so that the product cannot overflow
  if (outH < 1 || outW < 1 || outH > kMax || outW > kMax || outH * outW > kMax) {
    throw Error(where + "expected outH and outW >= 1 with outH * outW <= " + std::to_string(kMax) +
                " (SpatialTransformer::kMaxOutputPoints), got outH " + std::to_string(outH) + ", outW " +
                std::to_string(outW));
  }
}
}  // namespace

SpatialTransformer::SpatialTransformer(ModulePtr localisation, int64_t outH_, int64_t outW_, int64_t nInputPlane_)
    : outH(outH_), outW(outW_), nInputPlane(nInputPlane_) {
  if (!localisation) throw Error(std::string(kTypeName) + ": expected a localisation module, got nullptr");
  check_out_size(std::string(kTypeName) + ": ", outH, outW);
  if (nInputPlane < 0) {
    throw Error(std::string(kTypeName) + ": expected nInputPlane >= 0 (0: any), got " + std::to_string(nInputPlane));
  }
  add(std::move(localisation));
}

SpatialTransformer::SpatialTransformer(int64_t outH_, int64_t outW_, int64_t nInputPlane_)
    : outH(outH_), outW(outW_), nInputPlane(nInputPlane_), localised_(false) {
  check_out_size(std::string(kTypeName) + ": ", outH, outW);
  if (nInputPlane < 0) {
    throw Error(std::string(kTypeName) + ": expected nInputPlane >= 0 (0: any), got " + std::to_string(nInputPlane));
  }
}

ModulePtr SpatialTransformer::localisation() const {
  if (!localised_) {
    throw Error(where("localisation") +
                "expected a localisation network, got none (this transformer takes theta from thetaInput)");
  }
  if (modules.empty() || !modules[0]) {
    throw Error(where("localisation") + "expected the localisation network in modules[0], got " +
                (modules.empty() ? std::string("no module") : std::string("nullptr")));
  }
  return modules[0];
}

template <class F>
decltype(auto) SpatialTransformer::localisationErrors(const Tensor& input, const char* method, F&& f) {
  try {
    return rethrowErrors(0, std::forward<F>(f));
  } catch (const Error& e) {
    // the network names its own (perhaps reshaped) input: say which of ours it refused
    const int64_t planes = input.size(1);
    std::string expected;
    if (nInputPlane == 0 && lastPlanes_ > 0 && planes != lastPlanes_) {
      expected = "expected input [N x " + std::to_string(lastPlanes_) + " x H x W] (the planes of the last input " +
                 "the localisation network took; nInputPlane 0 checks none), got ";
    } else {
      expected = nInputPlane == 0 ? "expected input the localisation network takes (nInputPlane 0 checks no plane "
                                    "count up front), got "
                                  : "expected input the localisation network takes, got ";
    }
    throw Error(where(method) + expected + tensor::shape_str(input.sizes()) + ": " + e.what());
  }
}

void SpatialTransformer::checkModules(const char* method) const {
  const size_t want = localised_ ? 1 : 0;
  if (modules.size() != want) {
    throw Error(where(method) +
                (localised_ ? "expected one module (the localisation network), got "
                            : "expected no module (theta comes from thetaInput), got ") +
                std::to_string(modules.size()) + " modules");
  }
  if (localised_) child_at(*this, modules, 0, method);
  check_out_size(where(method), outH, outW);
}

void SpatialTransformer::checkInput(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  if (input.dim() != 4 || input.size(1) < 1 || input.size(2) < 1 || input.size(3) < 1) {
    throw Error(where(method) + "expected 4D input [N x C x H x W] with C, H, W >= 1, got " +
                tensor::shape_str(input.sizes()));
  }
  // up front: the localisation network would report its own (reshaped) input instead
  if (nInputPlane > 0 && input.size(1) != nInputPlane) {
    throw Error(where(method) + "expected input [N x " + std::to_string(nInputPlane) + " x H x W] (nInputPlane " +
                std::to_string(nInputPlane) + "), got " + tensor::shape_str(input.sizes()));
  }
}

void SpatialTransformer::takeTheta(const Tensor& input, const Tensor& thetaOut) {
  const int64_t N = input.size(0);
  if (thetaOut.sizes() != Shape{N, 6} && thetaOut.sizes() != Shape{N, 2, 3}) {
    throw Error(where("updateOutput") + "expected the localisation network to output theta of [" + std::to_string(N) +
                " x 6] or [" + std::to_string(N) + " x 2 x 3] for input " + tensor::shape_str(input.sizes()) +
                ", got " + tensor::shape_str(thetaOut.sizes()));
  }
  if (thetaOut.dtype() != input.dtype() || thetaOut.device() != input.device()) {
    throw Error(where("updateOutput") + "expected theta of the input's dtype and device (" + input.description() +
                "), got " + thetaOut.description());
  }
  thetaShape_ = thetaOut.sizes();
  ensure(theta, {N, 2, 3}, input).copy_(thetaOut.reshape({N, 2, 3}));
}

const Tensor& SpatialTransformer::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  checkInput(input, "updateOutput");
  if (localised_) {
    const Tensor& thetaOut =
        localisationErrors(input, "updateOutput", [&]() -> const Tensor& { return modules[0]->forward(input); });
    lastPlanes_ = input.size(1);
    takeTheta(input, thetaOut);
  } else {
    if (!thetaInput.defined()) {
      throw Error(where("updateOutput") +
                  "expected thetaInput set before forward (no localisation network), got an undefined tensor");
    }
    takeTheta(input, thetaInput);
  }
  sample(input, theta);
  return output;
}

// Note [nn.SpatialTransformer on CUDA tensors]
// As a container it runs on the device of its input (Container::computesOn), its children
// bridging themselves; the nn sampler computes on the CPU, so for a CUDA input it samples CPU
// copies and hands the result back on the input's device, as the device bridge does for a leaf.
void SpatialTransformer::sample(const Tensor& input, const Tensor& th) {
  check_float(where("updateOutput"), input);
  if (input.is_cpu()) {
    spatial_tf_forward(input, th, outH, outW, output);
    return;
  }
  const Tensor y = spatial_tf(input.cpu(), th.cpu(), outH, outW);
  ensure(output, y.sizes(), input).copy_(y);
}

void SpatialTransformer::sampleBackward(const Tensor& input, const Tensor& th, const Tensor& gradOutput,
                                        Tensor& gradImage, Tensor& gradTh) {
  check_float(where("backward"), input);
  if (input.is_cpu()) {
    spatial_tf_backward(input, th, gradOutput, gradImage, gradTh);
    return;
  }
  // See Note [nn.SpatialTransformer on CUDA tensors]
  const SpatialTfGrads g = spatial_tf_backward(input.cpu(), th.cpu(), gradOutput.cpu());
  ensure(gradImage, g.gradImage.sizes(), input).copy_(g.gradImage);
  ensure(gradTh, g.gradTheta.sizes(), input).copy_(g.gradTheta);
}

void SpatialTransformer::samplerBackward(const Tensor& input, const Tensor& gradOutput, Tensor& image,
                                         const char* method) {
  checkModules(method);
  checkInput(input, method);
  const int64_t N = input.size(0);
  if (!theta.defined() || theta.size(0) != N || theta.device() != input.device() || theta.dtype() != input.dtype()) {
    throw Error(where(method) + "expected a forward on this input first (theta " +
                (theta.defined() ? theta.description() : std::string("undefined")) + ", input " + input.description() +
                ")");
  }
  if (!gradOutput.defined()) throw Error(where(method) + "gradOutput is undefined");
  const Shape want{N, input.size(1), outH, outW};
  if (gradOutput.sizes() != want) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(want) + ", got " +
                tensor::shape_str(gradOutput.sizes()));
  }
  if (gradOutput.dtype() != input.dtype() || gradOutput.device() != input.device()) {
    throw Error(where(method) + "expected gradOutput of the input's dtype and device (" + input.description() +
                "), got " + gradOutput.description());
  }
  sampleBackward(input, theta, gradOutput, image, gradTheta);
}

template <class Step>
void SpatialTransformer::backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput, Step step) {
  // without gradInput (Note [gradInput not needed] in Module.cpp) the image gradient is scratch
  samplerBackward(input, gradOutput, wantGradInput ? gradInput : gradScratch_, "backward");
  if (!localised_) {  // theta's gradient stays in gradTheta; gradInput is the image's alone
    if (!wantGradInput) gradInput = Tensor();
    return;
  }
  const Tensor gradThetaOut = gradTheta.view(thetaShape_);
  const Tensor& gl =
      localisationErrors(input, "backward", [&]() -> const Tensor& { return step(*modules[0], input, gradThetaOut); });
  if (wantGradInput) {
    gradInput.add_(gl);
  } else {
    gradInput = Tensor();
  }
}

const Tensor& SpatialTransformer::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  backwardPass(input, gradOutput, true,
               [](Module& m, const Tensor& x, const Tensor& g) -> const Tensor& { return m.updateGradInput(x, g); });
  return gradInput;
}

void SpatialTransformer::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (!localised_) return;  // no parameters
  samplerBackward(input, gradOutput, gradScratch_, "accGradParameters");
  const Tensor gradThetaOut = gradTheta.view(thetaShape_);
  localisationErrors(input, "accGradParameters", [&]() { modules[0]->accGradParameters(input, gradThetaOut, scale); });
}

void SpatialTransformer::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, gradInputNeeded(), [scale](Module& m, const Tensor& x, const Tensor& g) -> const Tensor& {
    return m.backward(x, g, scale);
  });
}

std::string SpatialTransformer::str() const {
  std::string s = type_name() + "(" + (nInputPlane > 0 ? "nInputPlane " + std::to_string(nInputPlane) + ", " : "") +
                  "outH " + std::to_string(outH) + ", outW " + std::to_string(outW) + ") {";
  if (!localised_) return s.substr(0, s.size() - 3) + ", theta input)";  // no " {"
  if (!modules.empty()) s += "\n  localisation: " + indent_lines(child_at(*this, modules, 0, "str").str(), "  ");
  return s + "\n}";
}

tensor::Json SpatialTransformer::config() const {
  tensor::Json::Object o{{"outH", outH}, {"outW", outW}};
  if (nInputPlane > 0) o.emplace_back("nInputPlane", nInputPlane);  // absent: any (model files before it)
  return o;
}

ModulePtr SpatialTransformer::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader c(config, kTypeName);
  const int64_t h = c.integer("outH"), w = c.integer("outW"), planes = c.integer("nInputPlane", 0);
  check_out_size(std::string(kTypeName) + ": ", h, w);  // before finish(): a model file is refused as it is validated
  c.finish();
  if (children.empty()) return std::make_shared<SpatialTransformer>(h, w, planes);  // theta input
  if (children.size() != 1) {
    throw Error(std::string(kTypeName) + ": expected one child (the localisation network) or none, got " +
                std::to_string(children.size()));
  }
  return std::make_shared<SpatialTransformer>(children[0], h, w, planes);
}

}  // namespace nn
