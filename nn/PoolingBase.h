// PoolingBase.h: the bases of the max and average pooling modules over 2 (Spatial*) and 3
// (Volumetric*) spatial dims. PoolingBase holds what all four and their cudnn twins share:
// argument checks, Torch's output size (outputShape), printing, and the calls into the one
// N-d kernel (nn/kernels/Pooling.h); SpatialPooling and VolumetricPooling hold Torch's fields;
// MaxPoolingModule and AveragePoolingModule hold what a max or an average module adds over
// either, so a module only states Torch's constructors and its kTypeName.
// Input [C x spatial] or [N x C x spatial]; output [.. x C x pooled spatial].
#pragma once

#include <array>
#include <optional>
#include <tuple>

#include "nn/Module.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Pooling.h"
#include "tensor/Json.h"

namespace nn {

class PoolingBase : public Module {
 public:
  // The output shape for `input`, as Torch computes it (floor or ceil, see
  // kernels::pool_output_size); throws, naming `method`, for a wrong rank, an empty spatial
  // dim or an input too small for the kernel.
  Shape outputShape(const Tensor& input, const char* method = "outputShape") const;
  // Throws unless kernel and stride are >= 1 and 0 <= padding <= kernel / 2 (Torch's limit).
  // Without a method the message starts with the type name alone (constructors).
  void checkArguments(const char* method = nullptr) const;
  // Throws unless gradOutput has input's dtype and device and the output's shape; returns that
  // shape. Any dtype: the caller checks the input's (the cudnn twins take 16-bit data too).
  Shape checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  // Torch's: nn.SpatialMaxPooling(2x2, 2,2) or nn.VolumetricMaxPooling(2x2x2, 2,2,2, 1,1,1);
  // kernel, stride and padding in the constructor's order, padding only when non-zero.
  std::string str() const override;
  // fromConfig's reading of what config() writes beside the fields: ceil_mode (averages:
  // count_include_pad too).
  virtual void readFlags(ConfigReader& c) { ceil_mode = c.flag("ceil_mode", false); }

  bool ceil_mode = false;

 protected:
  // Kernel, stride and padding in the tensor's dim order (T, H, W); 2-d pooling has dims 2
  // and kernel 1, stride 1, padding 0 along T.
  struct Window {
    int dims;
    std::array<int64_t, 3> k, d, pad;
  };
  virtual Window window() const = 0;

  // The computations of the max and average modules, shared by 2 and 3 dims; they return
  // output or gradInput.
  const Tensor& maxForward(const Tensor& input, Tensor& indices);
  const Tensor& maxBackward(const Tensor& input, const Tensor& gradOutput, const Tensor& indices);
  const Tensor& averageForward(const Tensor& input, bool count_include_pad);
  const Tensor& averageBackward(const Tensor& input, const Tensor& gradOutput, bool count_include_pad);

 private:
  kernels::PoolGeometry geometry(const Tensor& input, const Shape& outShape) const;
  Shape maxInputShape_;  // the input the indices were computed for
};

// Torch's SpatialMaxPooling / SpatialAveragePooling fields.
class SpatialPooling : public PoolingBase {
 public:
  tensor::Json config() const override;  // the fields and ceil_mode
  int64_t kW, kH, dW, dH, padW, padH;

 protected:
  SpatialPooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
      : kW(kW), kH(kH), dW(dW), dH(dH), padW(padW), padH(padH) {}
  // The fields in the constructor's order, as config() wrote them; an absent stride reads as
  // strideFallback where there is one (SpatialAveragePooling's constructor default).
  static std::array<int64_t, 6> readFields(ConfigReader& c, std::optional<int64_t> strideFallback);
  Window window() const override { return {2, {1, kH, kW}, {1, dH, dW}, {0, padH, padW}}; }
};

// Torch's VolumetricMaxPooling / VolumetricAveragePooling fields, and their constructors,
// which are the same for both: the modules inherit them.
class VolumetricPooling : public PoolingBase {
 public:
  tensor::Json config() const override;  // the fields and ceil_mode
  int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;

 protected:
  // Torch's: the stride defaults to the kernel, the padding to 0.
  VolumetricPooling(int64_t kT, int64_t kW, int64_t kH) : VolumetricPooling(kT, kW, kH, kT, kW, kH) {}
  VolumetricPooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH, int64_t padT = 0,
                    int64_t padW = 0, int64_t padH = 0)
      : kT(kT), kW(kW), kH(kH), dT(dT), dW(dW), dH(dH), padT(padT), padW(padW), padH(padH) {}
  // The fields in the constructor's order, as config() wrote them (the stride required).
  static std::array<int64_t, 9> readFields(ConfigReader& c, std::optional<int64_t> strideFallback);
  Window window() const override { return {3, {kT, kH, kW}, {dT, dH, dW}, {padT, padH, padW}}; }
};

// What every pooling module adds over its Fields (SpatialPooling or VolumetricPooling): its
// type name from Self::kTypeName, Torch's ceil() and floor(), fromConfig, and the argument
// checks, run by the constructor once the type name is known. The constructor takes Fields'
// arguments: a module's own constructors pass them, or it inherits Fields' (the volumetric ones).
template <class Self, class Fields>
class PoolingModule : public Fields {
 public:
  template <class... Args>
  PoolingModule(Args... fields) : Fields(fields...) {
    this->checkArguments();
  }

  std::string type_name() const override { return std::string(Self::kTypeName); }
  Self& ceil() {
    this->ceil_mode = true;
    return static_cast<Self&>(*this);
  }
  Self& floor() {
    this->ceil_mode = false;
    return static_cast<Self&>(*this);
  }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigWith(config, std::nullopt); }

 protected:
  // config() read back: the fields (checked by the constructor), then the flags.
  static ModulePtr fromConfigWith(const tensor::Json& config, std::optional<int64_t> strideFallback) {
    ConfigReader c(config, Self::kTypeName);
    const auto fields = Fields::readFields(c, strideFallback);
    auto m = std::apply([](auto... f) { return std::make_shared<Self>(f...); }, fields);
    m->readFlags(c);
    c.finish();
    return m;
  }
};

// SpatialMaxPooling and VolumetricMaxPooling: the maximum of each window, and where it was.
template <class Self, class Fields>
class MaxPoolingModule : public PoolingModule<Self, Fields> {
 public:
  const Tensor& updateOutput(const Tensor& input) override { return this->maxForward(input, indices); }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    return this->maxBackward(input, gradOutput, indices);
  }

  // Int64, the output's shape: each maximum's offset in its plane (h * W + w, or
  // (t * H + h) * W + w)
  Tensor indices;

  using PoolingModule<Self, Fields>::PoolingModule;
};

// SpatialAveragePooling and VolumetricAveragePooling: the mean of each window, over the window
// with its padding (count_include_pad, the default, as Torch) or over the input it covers.
template <class Self, class Fields>
class AveragePoolingModule : public PoolingModule<Self, Fields> {
 public:
  const Tensor& updateOutput(const Tensor& input) override { return this->averageForward(input, count_include_pad); }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    return this->averageBackward(input, gradOutput, count_include_pad);
  }
  Self& setCountIncludePad() {
    count_include_pad = true;
    return static_cast<Self&>(*this);
  }
  Self& setCountExcludePad() {
    count_include_pad = false;
    return static_cast<Self&>(*this);
  }
  tensor::Json config() const override {  // the fields, ceil_mode and count_include_pad
    tensor::Json c = Fields::config();
    c.set("count_include_pad", count_include_pad);
    return c;
  }
  void readFlags(ConfigReader& c) override {
    Fields::readFlags(c);
    count_include_pad = c.flag("count_include_pad", true);
  }

  bool count_include_pad = true;

  using PoolingModule<Self, Fields>::PoolingModule;
};

}  // namespace nn
