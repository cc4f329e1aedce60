// SpatialPaddingBase.h: the shared base of Torch's spatial paddings, which differ only in what
// the added border holds: SpatialZeroPadding (zeros), SpatialReflectionPadding (the input
// mirrored about its edge, the edge itself not repeated) and SpatialReplicationPadding (the
// edge repeated). Input [C x H x W] or [N x C x H x W], any strides; output [.. x (H + pad_t +
// pad_b) x (W + pad_l + pad_r)]. A negative pad crops (Torch's; PyTorch's F.pad), and the
// output must keep at least one row and column; reflection needs each pad smaller than the
// input's size along its axis (PyTorch's rule: one mirror image). Backward is a gather (Note
// [Backward as a gather] in nn/kernels/SpatialIndex.h). Twins: cudnn::SpatialPaddingBase.
#pragma once

#include <array>
#include <optional>

#include "nn/Module.h"
#include "nn/kernels/SpatialIndex.h"

namespace nn {

class SpatialPaddingBase : public Module {
 public:
  SpatialPaddingBase(kernels::PadMode mode, int64_t pad_l, int64_t pad_r, int64_t pad_t, int64_t pad_b);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  std::string str() const override;  // nn.SpatialZeroPadding(l=1, r=1, t=2, b=0), as Torch prints
  tensor::Json config() const override;

  kernels::PadMode mode() const { return mode_; }
  // The output's shape for `input`; throws unless input is 3-d or 4-d and the pads fit it.
  Shape outputShape(const Tensor& input, const char* method) const;
  // Throws unless gradOutput is defined, has the output's shape and input's dtype and device.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;

  int64_t pad_l, pad_r, pad_t, pad_b;  // Torch's fields

 protected:
  // fromConfig's reading: l, r, t, b.
  static std::array<int64_t, 4> readPads(const tensor::Json& config, std::string_view type);

 private:
  kernels::PadMode mode_;
};

// Torch's constructor: X(pad_l, pad_r = pad_l, pad_t = pad_l, pad_b = pad_l).
template <class Self, kernels::PadMode Mode>
class SpatialPaddingModule : public SpatialPaddingBase {
 public:
  explicit SpatialPaddingModule(int64_t l, std::optional<int64_t> r = {}, std::optional<int64_t> t = {},
                                std::optional<int64_t> b = {})
      : SpatialPaddingBase(Mode, l, r.value_or(l), t.value_or(l), b.value_or(l)) {}
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) {
    const auto p = readPads(config, Self::kTypeName);
    return std::make_shared<Self>(p[0], p[1], p[2], p[3]);
  }
};

}  // namespace nn
