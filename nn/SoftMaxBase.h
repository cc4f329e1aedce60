// SoftMaxBase.h: the shared base of SoftMax, LogSoftMax, SpatialSoftMax, SpatialLogSoftMax,
// VolumetricSoftMax and VolumetricLogSoftMax. Each views its input as [outer x channels x
// inner] (layout(), which also checks the rank) and takes the (log-)softmax over channels
// at every (outer, inner) position with one kernel (kernels/SoftMax.h). Twins: the cudnn
// softmax modules, which call cudnnSoftmaxForward in CHANNEL mode over an [outer x channels
// x inner x 1] descriptor built from the same layout(), ACCURATE or LOG by isLog().
#pragma once

#include "nn/Module.h"
#include "nn/ModuleConfig.h"
#include "tensor/Json.h"

namespace nn {

class SoftMaxBase : public Module {
 public:
  // Which input ranks a module accepts and where its channel dimension is:
  //   Instance (SoftMax, as Torch): [n], [batch x n], [C x H x W], [N x C x H x W]
  //   Spatial: [C x H x W], [N x C x H x W]; Volumetric: [C x T x H x W], [N x C x T x H x W]
  enum class Family { Instance, Spatial, Volumetric };
  struct Layout {
    int64_t outer, channels, inner;
  };

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;

  // Checks dtype and rank (throwing with the method and shape named) and returns the view.
  Layout layout(const Tensor& input, const char* method) const;
  // The rank check alone, for any dtype (the cudnn twins also take float16 and bfloat16).
  Layout shapeLayout(const Shape& sizes, const char* method) const;
  // Backward's checks: updateOutput ran on this input's shape and dtype, and gradOutput has them.
  void checkBackward(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  Family family() const { return family_; }
  bool isLog() const { return log_; }
  // {"fast": true} when set (absent otherwise, so older files read the same).
  tensor::Json config() const override;

  // cudnn.torch's fastMode: the cudnn twin uses CUDNN_SOFTMAX_FAST (no max subtraction)
  // instead of ACCURATE; the log variants and the CPU ignore it. Kept here, on the nn module,
  // so it survives convert() both ways and model files.
  bool fast = false;

 protected:
  SoftMaxBase(Family family, bool log) : family_(family), log_(log) {}
  // For SoftMaxModule's fromConfig: builds M and reads the shared options.
  template <class M>
  static ModulePtr build(const tensor::Json& config);

  Family family_;
  bool log_;
};

// What each softmax module adds to SoftMaxBase: its family and log flag, and its type name
// and fromConfig from Self::kTypeName. A module is `class SoftMax : public
// SoftMaxModule<SoftMax, Family::Instance, false>` with its kTypeName.
template <class Self, SoftMaxBase::Family F, bool Log>
class SoftMaxModule : public SoftMaxBase {
 public:
  SoftMaxModule() : SoftMaxBase(F, Log) {}
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return build<Self>(config); }
};

template <class M>
ModulePtr SoftMaxBase::build(const tensor::Json& config) {
  ConfigReader r(config, M::kTypeName);
  auto m = std::make_shared<M>();
  m->fast = r.flag("fast", false);
  r.finish();
  return m;
}

}  // namespace nn
