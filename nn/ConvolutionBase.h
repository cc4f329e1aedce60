// ConvolutionBase.h: what Spatial/Volumetric(Full)Convolution share: parameters, Torch's
// reset/noBias, argument and shape checks, output sizes, and the three passes over the one
// N-d kernel (nn/kernels/Convolution.h). A subclass names its configuration in Torch's fields
// (kW, dW, padW, ...) and maps them to a ConvSpec; a transposed subclass's forward is the
// convolution's backward-data and vice versa. The cudnn twins reuse spec(), outputSizes()
// and checkGradOutputSizes() to build their descriptors.
#pragma once

#include <array>
#include <string>

#include "nn/Module.h"
#include "nn/kernels/Convolution.h"

namespace nn {

class ConfigReader;

// The cuDNN algorithm choices of one convolution module, cudnn.torch's setMode()/fastest():
// flag values of conv.algo_fwd, conv.algo_bwd_filter and conv.algo_bwd_data (an algorithm
// name or a policy, see cudnn/core/Config.h; "" follows the global flag) and `fastest` (ignore
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

// setMode / resetMode / fastest on a module holding a ConvAlgorithms `algo` (the convolution
// family and nn::TemporalConvolution), returning the module for chaining.
template <class Self>
class WithConvAlgorithms {
 public:
  Self& setMode(const std::string& fwd, const std::string& bwdFilter, const std::string& bwdData) {
    algo.fwd = fwd;
    algo.bwdFilter = bwdFilter;
    algo.bwdData = bwdData;
    return static_cast<Self&>(*this);
  }
  Self& resetMode() {  // back to the global flags, fastest off
    algo = ConvAlgorithms{};
    return static_cast<Self&>(*this);
  }
  Self& fastest(bool on = true) {
    algo.fastest = on;
    return static_cast<Self&>(*this);
  }

  ConvAlgorithms algo;
};

// The convolutions' input check (ConvolutionBase and TemporalConvolution): t is float32 or
// float64 of weight's dtype and device. Cheap when it holds; the message, naming m's method,
// is built only when it fails.
void check_conv_input(const Module& m, const Tensor& t, const Tensor& weight, const char* what, const char* method);

class ConvolutionBase : public Module, public WithConvAlgorithms<ConvolutionBase> {
 public:
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;

  // stdv < 0: Torch's default 1/sqrt(prod(k) * nInputPlane/groups); weight and bias ~ U(-stdv, stdv).
  void reset(double stdv = -1);
  // Drops the bias (Torch's noBias()); prints " without bias".
  ConvolutionBase& noBias();

  // The configuration, read from the subclass's Torch-named fields (right-aligned, see Dims).
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
  // The same, for the spec() a pass has already read (each pass reads it once).
  Shape outputSizes(const ConvSpec& s, const Shape& inputSizes, const char* method) const;
  void checkGradOutputSizes(const ConvSpec& s, const Shape& inputSizes, const Shape& gradOutputSizes,
                            const char* method) const;
  // gradWeight and gradBias of the parameters' shapes, before a pass writes them (Note
  // [Parameters are checked where they are used]; the values are checked with the config).
  void checkGradients(const ConvSpec& s, const char* method) const;

  int64_t nInputPlane, nOutputPlane;
  Tensor weight, bias, gradWeight, gradBias;

 protected:
  ConvolutionBase(int64_t nInputPlane, int64_t nOutputPlane, bool transposed);
  // Called by each subclass constructor once its fields are set: checks them, allocates and
  // initialises the parameters.
  void initParameters();
  void visitState(StateVisitor& v) override;
  // The filter and its gradient may be channels-last (Module::to(MemoryFormat)).
  bool takesChannelsLastParameters() const override { return true; }
  // Throws unless the fields describe a valid convolution whose parameters have the right
  // shapes, naming `method` (nullptr: the module alone, as its constructor does).
  void checkConfig(const ConvSpec& s, const char* method) const;
  // The kernels' geometry for a checked input and output of these shapes.
  kernels::ConvGeometry geometry(const ConvSpec& s, const Shape& inputShape, const Shape& outputShape) const;
  // Torch's printing: "<type>(I -> O, k, stride[, pad][, adj][, dilation])[ without bias]" with
  // the values in `order` (indices into the spec's dims: W-first for Torch's "kWxkH").
  std::string describe(const std::vector<int>& order, bool alwaysShowDilation = false) const;

  Shape weightShape(const ConvSpec& s) const;
  // outputShape / checkGradOutput's dtype and device checks (messages built only on failure).
  void checkInput(const Tensor& t, const char* what, const char* method) const;

  bool transposed_;
  Tensor columns_;  // im2col workspace (Torch's finput), reused between calls
};

// What SpatialConvolution, SpatialFullConvolution, VolumetricConvolution and
// VolumetricFullConvolution add to ConvolutionBase beside their Torch fields: whether they are
// transposed, and their type name from Self::kTypeName.
template <class Self, bool Transposed>
class ConvolutionModule : public ConvolutionBase {
 public:
  std::string type_name() const override { return std::string(Self::kTypeName); }

 protected:
  ConvolutionModule(int64_t nInputPlane, int64_t nOutputPlane)
      : ConvolutionBase(nInputPlane, nOutputPlane, Transposed) {}
};

}  // namespace nn
