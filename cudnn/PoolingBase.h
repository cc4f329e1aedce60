// PoolingBase.h: the shared base of the pooling twins (cudnn::SpatialMaxPooling,
// SpatialAveragePooling, VolumetricMaxPooling, VolumetricAveragePooling): the nn base's kernel,
// stride, padding, ceil_mode and count_include_pad become cudnn::PoolParams for one PoolPlan
// (cudnn/ops/pool.h)
// (cudnnPoolingForward / Backward; ceil-mode shapes that add windows run on kernels/PoolCeil.cu
// with Torch's semantics). Output sizes are the nn base's outputShape(), so always Torch's.
// Max pooling is PoolMode::Max (max_deterministic under the deterministic flag); average
// pooling AverageIncPad or AverageExcPad as count_include_pad says. float32, float64, float16
// and bfloat16; [C x spatial] inputs run as a batch of one. Channels-last inputs keep their
// layout (Note [Channels-last twins] in cudnn/core/Layout.h; the ceil-mode kernels go through
// row-major copies).
//
// Note [Pooling backward state]: cuDNN's backward takes x, y and dy, so backward needs the
// forward's input and output. Max pooling throws, as the nn module does, when backward's input
// differs in shape, dtype or device from the last forward's (Torch's contract: backward gets
// forward's input); average pooling, whose nn module keeps no forward state, runs the forward
// again first. cuDNN's max backward finds each window's maximum by comparing x with y (Caffe
// issues #2688, #3574), so a later in-place layer writing into `output` (ReLU(true), an in-place
// dropout) would misplace the gradient, where nn's recorded indices are immune: the max twins
// keep a private copy of y for backward (one device copy per forward), except where backward
// runs on our kernel, which reads x alone (PoolPlan::backward_reads_output; channels-last data
// with windows that do not overlap by default, flag pool.backward in cudnn/ops/pool.h). Average gradients depend
// on neither x's nor y's values, so the average twins keep none. The twin computes no
// `indices`: its forward drops any the nn module held, so an nn module converted back cannot
// use stale ones.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "cudnn/Twin.h"
#include "nn/PoolingBase.h"

namespace cudnn {

namespace detail {
// A pooling twin's nn fields, for the compute: kernel, stride and padding in the tensor's dim
// order (nn::PoolingBase::Window), ceil_mode, and count_include_pad of the average modules.
struct PoolSettings {
  int dims;
  std::array<int64_t, 3> k, d, pad;
  bool ceilMode;
  bool countIncludePad;
};

// The compute of every pooling twin; the twin checks its arguments first. Its cuDNN state (a
// PoolPlan and the PoolParams of cudnn/ops/pool.h, not installed) lives in the .cpp.
class PoolingCompute {
 public:
  // average: the average modules, whose backward needs no copy of the output (the max ones
  // keep one: Note [Pooling backward state])
  explicit PoolingCompute(bool average);
  ~PoolingCompute();

  // m.output = pool(input), of shape outShape (the nn base's outputShape).
  void forward(nn::Module& m, const Tensor& input, const Shape& outShape, const PoolSettings& s);
  // m.gradInput from input, m.output and gradOutput (checked by the caller).
  void backward(nn::Module& m, const Tensor& input, const Tensor& gradOutput, const PoolSettings& s);
  // Whether the last forward ran on an input of this shape, dtype and device, and its output,
  // of shape outShape, is still there for backward (Module::to drops outputs).
  bool ranOn(const nn::Module& m, const Tensor& input, const Shape& outShape) const;
  // "float32 [1 x 5 x 5] on cuda:0", or "nothing" before the first forward.
  const std::string& lastInput() const { return last_; }

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
  bool average_;
  Tensor y_;  // the copy of the output backward reads, for max pooling
  bool ran_ = false;
  Shape shape_;
  DType dtype_ = DType::Float32;
  tensor::Device device_ = tensor::Device::cpu();
  std::string last_ = "nothing";
};
}  // namespace detail

template <std::derived_from<nn::PoolingBase> Base>
class PoolingBase : public Twin<Base> {
  // The average modules are the ones with a count_include_pad field.
  static constexpr bool kAverage = requires(const Base& b) { b.count_include_pad; };

 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    const Shape shape = this->outputShape(input, "updateOutput");
    if constexpr (!kAverage) this->indices = Tensor();  // See Note [Pooling backward state]
    compute_.forward(*this, input, shape, settings());
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    const std::string where = this->checkCudaGrad("updateGradInput", input, gradOutput);
    const Shape shape = this->checkGradOutput(input, gradOutput, "updateGradInput");
    if (!compute_.ranOn(*this, input, shape)) {  // See Note [Pooling backward state]
      if constexpr (kAverage) {
        updateOutput(input);
      } else {
        throw tensor::Error(where +
                            "expected updateOutput to have run on an input of this shape, dtype and device, got " +
                            input.description() + " after updateOutput on " + compute_.lastInput());
      }
    }
    compute_.backward(*this, input, gradOutput, settings());
    return this->gradInput;
  }

 private:
  detail::PoolSettings settings() const {
    const auto w = this->window();
    bool countIncludePad = false;
    if constexpr (kAverage) countIncludePad = this->count_include_pad;
    return {w.dims, w.k, w.d, w.pad, this->ceil_mode, countIncludePad};
  }

  detail::PoolingCompute compute_{kAverage};
};

}  // namespace cudnn
