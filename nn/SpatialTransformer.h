// SpatialTransformer.h: the spatial transformer layer of Jaderberg et al. (2015), fitted to the
// single-input Module interface: its one child, the localisation network, maps the input
// [N x C x H x W] to theta, which must come out as [N x 6] or [N x 2 x 3] (the rows of each
// sample's 2 x 3 affine map); the input is then sampled on theta's grid, giving
// [N x C x outH x outW] (nn::spatial_tf, Note [Spatial transformer grid]). With nInputPlane > 0
// the input must have C = nInputPlane, checked before the localisation network sees it. Backward sends
// gradOutput through the sampler to the input and to theta, and theta's gradient through the
// localisation network, so its parameters learn; gradInput = the sampler's image gradient + the
// localisation network's gradInput. Children: modules[0] = localisation.
// Without a localisation network (the constructor without one), theta is an input the caller
// sets in `thetaInput` before each forward, as the recurrent modules take their initial states:
// the module then samples the input on it, and backward leaves theta's gradient in gradTheta
// (gradInput is the image's gradient alone). Prints as
//   nn.SpatialTransformer(16x16) {
//     localisation: nn.Linear(...)
//   }
// Coordinates follow align_corners=True (Note [Spatial transformer grid]): theta maps the
// output's corner pixels' centres to [-1, 1], as cuDNN's sampler and PyTorch's affine_grid +
// grid_sample with align_corners=True do. PyTorch's default (align_corners=False, since 1.3)
// differs: a theta trained there does not carry over unchanged.
// Twin: cudnn::SpatialTransformer (the sampling through cuDNN).
#pragma once

#include "nn/Container.h"

namespace nn {

class SpatialTransformer : public Container {
 public:
  // nInputPlane: the input's plane count C (0: any, the localisation network decides)
  SpatialTransformer(ModulePtr localisation, int64_t outH, int64_t outW, int64_t nInputPlane = 0);
  // Without a localisation network: theta comes from thetaInput.
  SpatialTransformer(int64_t outH, int64_t outW, int64_t nInputPlane = 0);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // Runs the sampler's backward again to get theta's gradient (backward() runs it once).
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.SpatialTransformer";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  // children: as config() leaves them out (model files store them apart): the localisation
  // network, or none for the module without one
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

  // The localisation network; throws naming the module when it has none (theta from thetaInput).
  ModulePtr localisation() const;
  bool hasLocalisation() const { return localised_; }

  // Note [Spatial transformer output bound]
  // outH * outW sampling points per plane, at most 2^24 (a 4096 x 4096 output): the output and
  // its gradient are [N x C x outH x outW], so the two sizes of a few bytes of model file decide
  // what every forward allocates. Checked at construction, in fromConfig (so a model file is
  // refused while it is validated) and on every pass (the fields are public).
  static constexpr int64_t kMaxOutputPoints = int64_t{1} << 24;

  int64_t outH, outW;
  int64_t nInputPlane = 0;
  // The last forward's theta, [N x 2 x 3], and the last backward's gradient with respect to it.
  Tensor theta, gradTheta;
  // Without a localisation network: theta for the next forward, [N x 6] or [N x 2 x 3] of the
  // input's dtype and device (copied into theta by the forward).
  Tensor thetaInput;

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // The compute a twin replaces: output = spatial_tf(input, theta, outH, outW), and its backward
  // into gradImage and gradTheta (written, not accumulated). Arguments are checked before.
  virtual void sample(const Tensor& input, const Tensor& theta);
  virtual void sampleBackward(const Tensor& input, const Tensor& theta, const Tensor& gradOutput, Tensor& gradImage,
                              Tensor& gradTheta);

 private:
  void checkModules(const char* method) const;
  void checkInput(const Tensor& input, const char* method) const;
  // f() with the localisation network's error rethrown naming this module's method and input
  // (its shape, and the plane count of the last input the network took when it differs).
  template <class F>
  decltype(auto) localisationErrors(const Tensor& input, const char* method, F&& f);
  // theta_out (the localisation network's output) as [N x 2 x 3], copied into `theta`
  void takeTheta(const Tensor& input, const Tensor& thetaOut);
  // gradOutput through the sampler: the image part into `image`, theta's into gradTheta
  void samplerBackward(const Tensor& input, const Tensor& gradOutput, Tensor& image, const char* method);
  template <class Step>
  void backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput, Step step);

  bool localised_ = true;  // fixed at construction: theta from modules[0], or from thetaInput
  Shape thetaShape_;    // the localisation network's output shape in the last forward
  // the plane count of the last input the localisation network took (0: none yet), for its errors
  int64_t lastPlanes_ = 0;
  Tensor gradScratch_;  // accGradParameters' image gradient (gradInput is left alone)
};

}  // namespace nn
