// ConvolutionBase.h: what Spatial/Volumetric(Full)Convolution share: parameters, Torch's
// reset/noBias, argument and shape checks, output sizes, and the three passes over the one
// N-d kernel (nn/kernels/Convolution.h). A subclass names its configuration in Torch's fields
// (kW, dW, padW, ...) and maps them to a ConvSpec; a transposed subclass's forward is the
// convolution's backward-data and vice versa. The cudnn twins reuse spec(), outputShape()
// and checkGradOutput() to build their descriptors.
#pragma once

#include <array>
#include <string>

#include "nn/Module.h"
#include "nn/kernels/Convolution.h"

namespace nn {

class ConfigReader;

// A convolution's configuration in tensor order (T, H, W); the first nd entries are used.
struct ConvSpec {
  int nd = 2;
  std::array<int64_t, 3> k{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1}, adj{0, 0, 0};
  int64_t groups = 1;
};

// The cuDNN algorithm choices of one convolution module, cudnn.torch's setMode()/fastest():
// flag values of conv.algo_fwd, conv.algo_bwd_filter and conv.algo_bwd_data (an algorithm
// name or a policy, see cudnn/Config.h; "" follows the global flag) and `fastest` (ignore
// workspace_limit for this module). They name cuDNN's passes, so a transposed convolution's
// forward runs under bwdData and its updateGradInput under fwd. Plain fields of the nn
// module, so they survive convert() both ways: used by the cudnn twin, ignored on the CPU.
// The twin checks the names when it first computes.
struct ConvAlgorithms {
  std::string fwd, bwdFilter, bwdData;
  bool fastest = false;
  bool operator==(const ConvAlgorithms&) const = default;
  // In model files: the "algo" key of the module's config(),
  // {"fwd": "", "bwdFilter": "", "bwdData": "", "fastest": false}; absent reads as the defaults.
  tensor::Json config() const;
  static ConvAlgorithms fromConfig(ConfigReader& moduleConfig);
};

class ConvolutionBase : public Module {
 public:
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;

  // stdv < 0: Torch's default 1/sqrt(prod(k) * nInputPlane/groups); weight and bias ~ U(-stdv, stdv).
  void reset(double stdv = -1);
  // Drops the bias (Torch's noBias()); prints " without bias".
  ConvolutionBase& noBias();

  // cudnn.torch's per-module algorithm overrides (see ConvAlgorithms; ignored on the CPU).
  ConvolutionBase& setMode(const std::string& fwd, const std::string& bwdFilter, const std::string& bwdData);
  ConvolutionBase& resetMode();  // back to the global flags, fastest off
  ConvolutionBase& fastest(bool on = true);

  // The configuration, read from the subclass's Torch-named fields.
  virtual ConvSpec spec() const = 0;
  // Transposed (full) convolution: weight [nInputPlane x nOutputPlane/groups x k...].
  bool transposed() const { return transposed_; }
  // [nOutputPlane x nInputPlane/groups x k...], or transposed [nInputPlane x nOutputPlane/groups x k...]
  Shape weightShape() const;
  // Checks configuration, dtype and the input's rank, plane count and size; returns the
  // output's shape (batched iff the input is). Throws naming `method`.
  Shape outputShape(const Tensor& input, const char* method = "updateOutput") const;
  // Checks that gradOutput has the shape forward(input) has.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // The same two checks on shapes alone, for any dtype (the cudnn twins also take float16
  // and bfloat16 and check dtype and device themselves).
  Shape outputSizes(const Shape& inputSizes, const char* method = "updateOutput") const;
  void checkGradOutputSizes(const Shape& inputSizes, const Shape& gradOutputSizes, const char* method) const;

  int64_t nInputPlane, nOutputPlane;
  Tensor weight, bias, gradWeight, gradBias;
  ConvAlgorithms algo;

 protected:
  ConvolutionBase(int64_t nInputPlane, int64_t nOutputPlane, bool transposed);
  // Called by each subclass constructor once its fields are set: checks them, allocates and
  // initialises the parameters.
  void initParameters();
  void visitState(StateVisitor& v) override;
  // Throws unless the fields describe a valid convolution whose parameters have the right shapes.
  void checkConfig(const std::string& where) const;
  // The kernels' geometry for a checked input and output of these shapes.
  kernels::ConvGeometry geometry(const Shape& inputShape, const Shape& outputShape) const;
  // Torch's printing: "<type>(I -> O, k, stride[, pad][, adj][, dilation])[ without bias]" with
  // the values in `order` (indices into the spec's dims: W-first for Torch's "kWxkH").
  std::string describe(const std::vector<int>& order, bool alwaysShowDilation = false) const;

  bool transposed_;
  Tensor columns_;  // im2col workspace (Torch's finput), reused between calls
};

}  // namespace nn
