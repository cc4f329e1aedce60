// conv.h: cuDNN convolutions, Theano's dnn_conv / dnn_gradweight / dnn_gradinput.
//   conv(img, kerns)                          y  = img (*) kerns
//   conv_grad_input(kerns, topgrad, shape)    dx = the gradient of y with respect to img
//   conv_grad_weight(img, topgrad, shape)     dw = the gradient of y with respect to kerns
// img [N x C x (D) x H x W], kerns [K x C/groups x (kD) x kH x kW] (2-D and 3-D), with
// Theano's border_mode (valid: no padding; full: pad = dilation*(k-1); half: pad =
// dilation*(k-1)/2; or explicit pads), subsample (strides), dilation, groups, conv_mode
// (`conv` flips the kernel, Theano's default; `cross` does not, as nn and cuDNN layers),
// algo (a flag value, see Config.h) and precision (the compute type).
//
// ConvPlan is the reusable state behind them: descriptors set only when shapes change, and
// per pass the algorithm chosen under the flags. See Note [Choosing a convolution algorithm]
// in conv_search.cpp. The twins (cudnn::SpatialConvolution, ...) each own one, through
// detail::ModulePlan (cudnn/ConvolutionBase.h).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cudnn/Functional.h"
#include "cudnn/Opaque.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/ops/activation.h"

namespace cudnn {

// BorderMode and ConvParams: cudnn/Functional.h.

// Resolves params against a kernel shape into the convolution's settings.
ConvSpec conv_spec(const ConvParams& p, const Shape& kerns_shape);
// The output shape of conv(img, kerns) for these settings; throws naming the shapes when the
// image is too small.
Shape conv_output_shape(const Shape& img, const Shape& kerns, const ConvSpec& g, const std::string& where);

// A site's algorithm choices, parsed once (cudnn.torch's setMode / fastest): per pass a flag
// value (a row of the algorithm table or a policy), or nullopt to follow the conv.algo_*
// flag; fastest true, or nullopt to follow the global flag.
struct ConvChoices {
  std::array<std::optional<AlgoSetting>, 3> mode;  // indexed by ConvPass
  std::optional<bool> fastest;

  // From nn::ConvAlgorithms' fields ("" follows the flag); throws on a name the pass lacks.
  static ConvChoices parse(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data,
                           bool fastest);
  bool operator==(const ConvChoices&) const = default;
};

// ConvPlan::algorithm() of a graph-API engine is kGraphEngine + the engine's global index.
inline constexpr int kGraphEngine = 1000;

class ConvPlan {
 public:
  // Per-site overrides, as cudnn.torch's setMode/fastest/resetMode. Setting what is already
  // set keeps the choices made; a changed mode makes the next call of each pass choose again,
  // a changed fastest re-checks the choice against the new cap. setMode parses flag values
  // ("" keeps the global flag) and keeps fastest; setFastest(nullopt) follows the global flag.
  void setChoices(const ConvChoices& choices);
  void setMode(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data);
  void resetMode();
  void setFastest(std::optional<bool> on);
  void setPrecision(std::optional<Precision> p);
  const ConvChoices& choices() const;
  std::string_view mode(ConvPass pass) const;  // the pass's flag value, "" when it follows the flag

  // out = alpha * op(...) + beta * out. Shapes must already agree (the ops above check).
  void forward(const Tensor& x, const Tensor& w, const Tensor& y, const ConvSpec& g, double alpha = 1, double beta = 0);
  void backward_data(const Tensor& w, const Tensor& dy, const Tensor& dx, const ConvSpec& g, double alpha = 1,
                     double beta = 0);
  void backward_filter(const Tensor& x, const Tensor& dy, const Tensor& dw, const ConvSpec& g, double alpha = 1,
                       double beta = 0);

  // y = act(conv(x, w) + bias) as one graph-API operation (Note [Fusion] in conv_search.cpp); bias
  // may be undefined and act nullopt (Relu, Tanh and Sigmoid fuse). Returns false, leaving y
  // to the caller, when no fused engine runs for these shapes (remembered: no new search).
  bool forward_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const ConvSpec& g,
                     std::optional<Activation> act);
  // The fused engine the last successful forward_fused ran (kGraphEngine + index), or -1.
  int fused_algorithm() const;

  // y += bias and db = alpha * (dy summed over every dim but 1) + beta * db, as add_bias and
  // backward_bias below, with descriptors the plan keeps (no cuDNN setup in steady state).
  void add_bias(const Tensor& y, const Tensor& bias);
  void backward_bias(const Tensor& dy, const Tensor& db, double alpha = 1, double beta = 0);
  // backward_bias on `stream` (the device's side stream: Note [The device's side stream] in
  // tensor/Cuda.h) where our kernels take dy's layout, the buffer the kernels read
  // handed back in `keep` for the caller to hold until it has joined; false: nothing was done
  // (call backward_bias).
  bool backward_bias_on(void* stream, const Tensor& dy, const Tensor& db, double alpha, double beta, Tensor& keep);

  // The algorithm and workspace the last call of a pass ran with (-1 before any): a legacy
  // cudnnConvolution*Algo_t value, or kGraphEngine + the global index of a graph-API engine.
  int algorithm(ConvPass pass) const;
  size_t workspace_bytes(ConvPass pass) const;
  // What the timed search behind a pass's last choice measured (Note [Trial workspaces] in
  // conv_search.cpp): one row per candidate it timed within the trial cap, fastest first; empty
  // when the choice was not timed.
  struct Timing {
    int algorithm;  // as algorithm()
    float ms;
    size_t workspace;
  };
  std::vector<Timing> timings(ConvPass pass) const;
  // How many algorithm searches (heuristic or timed) this plan has triggered: tests use it
  // to see that steady state and *_once policies do not search again.
  int searches() const;

  struct Impl;

 private:
  detail::Opaque<Impl> impl_;
};
// Impl is complete in the search's files only; conv.cpp instantiates its Opaque.
extern template class detail::Opaque<ConvPlan::Impl>;

// y += bias broadcast over every dim but 1 (the channels); y is 4-d or 5-d, bias [C].
void add_bias(const Tensor& y, const Tensor& bias);
// db = alpha * sum of dy over every dim but 1, + beta * db.
// See Note [Bias without cuDNN] in conv_bias.cpp for dtypes cuDNN has no bias kernels for.
void backward_bias(const Tensor& dy, const Tensor& db, double alpha = 1, double beta = 0);

// conv, conv_grad_input and conv_grad_weight: cudnn/Functional.h.

// Clears the process-wide algorithm cache (benchmarks; tests of the policies).
void clear_algorithm_cache();
// Its entries (one per pass, shape, layout, dtype and flags), at most conv.cache_limit.
size_t algorithm_cache_size();

}  // namespace cudnn
