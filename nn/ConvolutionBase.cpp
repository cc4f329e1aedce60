// ConvolutionBase.cpp: checks, sizes, and the passes of a (transposed) convolution.
//
// Note [Transposed convolution as the adjoint]
// A transposed convolution with weight W is the adjoint of the convolution with the same W
// that maps its output (the "image" side) back to its input. So in the kernels' terms the
// image is always the large side: for a convolution it is the input, for a transposed one
// the output. Then
//   convolution:  forward = conv_forward,        gradInput = conv_backward_data
//   transposed:   forward = conv_backward_data,  gradInput = conv_forward
// and the weight gradient is conv_backward_weight(image, other side) in both. Torch's
// transposed weight layout [nInputPlane x nOutputPlane/groups x k...] is exactly that
// convolution's [outC x inC/groups x k...]. The bias is added on the output side either way.
#include "nn/ConvolutionBase.h"

#include <algorithm>
#include <cmath>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "tensor/Format.h"

namespace nn {

using tensor::join;

namespace {

// "T x H x W" for 3 spatial dims, "H x W" for 2, "W" for 1.
std::string dim_names(int nd) {
  static const char* names[] = {"T", "H", "W"};
  std::string s;
  for (int i = 3 - nd; i < 3; ++i) s += std::string(i > 3 - nd ? " x " : "") + names[i];
  return s;
}

// The nd used slots of right-aligned Dims, and the first nd entries of left-aligned ones.
std::vector<int64_t> used(const Dims& a, int nd) { return {a.end() - nd, a.end()}; }
std::vector<int64_t> head(const Dims& a, int nd) { return {a.begin(), a.begin() + nd}; }

}  // namespace

ConvolutionBase::ConvolutionBase(int64_t nInputPlane_, int64_t nOutputPlane_, bool transposed)
    : nInputPlane(nInputPlane_), nOutputPlane(nOutputPlane_), transposed_(transposed) {}

void ConvolutionBase::initParameters() {
  // the bias first, so that a configuration error prints the module as constructed (with bias)
  bias = tensor::empty({std::max<int64_t>(nOutputPlane, 0)});
  gradBias = tensor::zeros({std::max<int64_t>(nOutputPlane, 0)});
  const ConvSpec s = spec();
  checkConfig(s, nullptr);
  weight = tensor::empty(weightShape(s));
  gradWeight = tensor::zeros(weightShape(s));
  reset();
}

Shape ConvolutionBase::weightShape() const { return weightShape(spec()); }

Shape ConvolutionBase::weightShape(const ConvSpec& s) const {
  Shape shape = transposed_ ? Shape{nInputPlane, nOutputPlane / s.groups} : Shape{nOutputPlane, nInputPlane / s.groups};
  for (int i = s.first(); i < 3; ++i) shape.push_back(s.k[i]);
  return shape;
}

void ConvolutionBase::reset(double stdv) {
  const ConvSpec s = spec();
  if (stdv < 0) {
    double fanIn = static_cast<double>(nInputPlane / s.groups);
    for (int i = s.first(); i < 3; ++i) fanIn *= static_cast<double>(s.k[i]);
    stdv = 1.0 / std::sqrt(fanIn);
  }
  weight.uniform_(-stdv, stdv);
  if (bias.defined()) bias.uniform_(-stdv, stdv);
}

ConvolutionBase& ConvolutionBase::noBias() {
  bias = Tensor();
  gradBias = Tensor();
  return *this;
}

void ConvolutionBase::visitState(StateVisitor& v) {
  v.parameter("weight", weight, gradWeight);
  if (bias.defined()) v.parameter("bias", bias, gradBias);
}

void ConvolutionBase::checkConfig(const ConvSpec& s, const char* method) const {
  auto at = [&] { return method ? where(method) : type_name() + ": "; };
  auto fail = [&](const std::string& what) { throw Error(at() + "expected " + what + ", got " + str()); };
  if (nInputPlane <= 0 || nOutputPlane <= 0) fail("positive plane counts");
  if (s.groups <= 0 || nInputPlane % s.groups != 0 || nOutputPlane % s.groups != 0) {
    fail("groups dividing nInputPlane and nOutputPlane");
  }
  for (int i = s.first(); i < 3; ++i) {
    if (s.k[i] <= 0 || s.stride[i] <= 0) fail("positive kernel sizes and strides");
    if (s.pad[i] < 0) fail("non-negative padding");
    if (s.dilation[i] <= 0) fail("positive dilation");
    if (s.adj[i] < 0 || (s.adj[i] > 0 && (!transposed_ || s.adj[i] >= s.stride[i]))) {
      fail("each adj smaller than its stride");
    }
  }
  // weightShape(s), compared without building it (this runs on every pass)
  auto weight_ok = [&] {
    const Shape& w = weight.sizes();
    if (static_cast<int>(w.size()) != s.nd + 2) return false;
    if (w[0] != (transposed_ ? nInputPlane : nOutputPlane)) return false;
    if (w[1] != (transposed_ ? nOutputPlane : nInputPlane) / s.groups) return false;
    for (int i = 0; i < s.nd; ++i) {
      if (w[2 + i] != s.k[s.first() + i]) return false;
    }
    return true;
  };
  // the kernels and cuDNN read them densely (Note [Parameters are checked where they are used]),
  // the filter in either layout (Module::to(MemoryFormat))
  if (weight.defined() && (!weight_ok() || !(weight.is_contiguous() || is_channels_last_parameter(weight)))) {
    throw Error(at() + "expected weight of " + tensor::shape_str(weightShape(s)) +
                " (contiguous or channels-last), got " + weight.description() +
                (weight.is_contiguous() ? "" : " (not contiguous)"));
  }
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != nOutputPlane || !bias.is_contiguous())) {
    throw Error(at() + "expected bias of [" + std::to_string(nOutputPlane) + "] (contiguous), got " +
                bias.description() + (bias.is_contiguous() ? "" : " (not contiguous)"));
  }
}

void ConvolutionBase::checkGradients(const ConvSpec& s, const char* method) const {
  check_parameter(*this, method, "weight", weight, weightShape(s), &gradWeight, true);
  if (bias.defined()) check_parameter(*this, method, "bias", bias, {nOutputPlane}, &gradBias);
}

void check_conv_input(const Module& m, const Tensor& t, const Tensor& weight, const char* what, const char* method) {
  const bool ok = t.defined() && (t.dtype() == tensor::DType::Float32 || t.dtype() == tensor::DType::Float64) &&
                  t.dtype() == weight.dtype() && t.device() == weight.device();
  if (ok) return;
  const std::string at = m.where(method);
  check_float(at, t, what);
  check_matches(at, t, weight, what);
}

void ConvolutionBase::checkInput(const Tensor& t, const char* what, const char* method) const {
  check_conv_input(*this, t, weight, what, method);
}

Shape ConvolutionBase::outputShape(const Tensor& input, const char* method) const {
  checkInput(input, "input", method);
  return outputSizes(spec(), input.sizes(), method);
}

Shape ConvolutionBase::outputSizes(const Shape& input, const char* method) const {
  return outputSizes(spec(), input, method);
}

Shape ConvolutionBase::outputSizes(const ConvSpec& s, const Shape& input, const char* method) const {
  checkConfig(s, method);
  auto at = [&] { return where(method); };
  const int64_t rank = static_cast<int64_t>(input.size());
  const bool batched = rank == s.nd + 2;
  if ((rank != s.nd + 1 && !batched) || input[batched ? 1 : 0] != nInputPlane) {
    const std::string planes = std::to_string(nInputPlane) + " x " + dim_names(s.nd);
    throw Error(at() + "expected input of [" + planes + "] or [batch x " + planes + "], got " +
                tensor::shape_str(input));
  }
  Shape out(input);
  if (batched) out[1] = nOutputPlane; else out[0] = nOutputPlane;
  const int64_t first_spatial = batched ? 2 : 1;
  Dims in{}, sizes{}, extent{}, padded{};  // per spatial dim, first nd entries
  bool ok = true, fits = true;
  // In 128 bits: kernels, strides and padding from a config can be anything up to 2^63, and
  // none of these products may wrap (Note [Checked sizes] in tensor/DType.cpp).
  using wide = __int128;
  auto narrow = [&fits](wide v) {
    if (v > INT64_MAX || v < INT64_MIN) fits = false;
    return fits ? static_cast<int64_t>(v) : int64_t{0};
  };
  for (int i = 0; i < s.nd; ++i) {
    const int d = s.first() + i;
    in[i] = input[first_spatial + i];
    const wide ext = wide{s.dilation[d]} * (s.k[d] - 1) + 1;  // the dilated kernel's extent
    const wide pad = wide{in[i]} + 2 * wide{s.pad[d]};
    wide size = 0;
    if (transposed_) {
      size = (wide{in[i]} - 1) * s.stride[d] - 2 * wide{s.pad[d]} + ext + s.adj[d];
    } else {
      const wide span = pad - ext;
      size = (span >= 0 ? span / s.stride[d] : -((-span + s.stride[d] - 1) / s.stride[d])) + 1;
    }
    extent[i] = narrow(ext);
    padded[i] = narrow(pad);
    sizes[i] = narrow(size);
    ok = ok && sizes[i] >= 1 && in[i] >= 1;
    out[first_spatial + i] = sizes[i];
  }
  if (!fits) {
    throw Error(at() + "the output size of input " + tensor::shape_str(input) + " with kernel " +
                join(used(s.k, s.nd), "x") + ", stride " + join(used(s.stride, s.nd), "x") + ", padding " +
                join(used(s.pad, s.nd), "x") + " and dilation " + join(used(s.dilation, s.nd), "x") +
                " overflows int64");
  }
  if (!ok) {
    const std::string geometry = "kernel " + join(used(s.k, s.nd), "x") + " with stride " +
                                 join(used(s.stride, s.nd), "x") + ", padding " + join(used(s.pad, s.nd), "x") +
                                 (transposed_ ? ", adj " + join(used(s.adj, s.nd), "x") : "") + " and dilation " +
                                 join(used(s.dilation, s.nd), "x");
    if (transposed_) {
      throw Error(at() + "expected input giving a non-empty output (" + dim_names(s.nd) + ") for a " + geometry +
                  ", got " + tensor::shape_str(input) + ": calculated output size " + join(head(sizes, s.nd), "x") +
                  ", too small");
    }
    throw Error(at() + "expected input of at least " + join(head(extent, s.nd), "x") + " (" + dim_names(s.nd) +
                ") after padding for a " + geometry + ", got " + tensor::shape_str(input) + ": padded size " +
                join(head(padded, s.nd), "x") + " gives output size " + join(head(sizes, s.nd), "x") + ", too small");
  }
  // Each size fits, but the output as a whole may not (huge padding or strides): said here,
  // with the geometry, rather than by tensor::empty, which knows neither the module nor the input.
  int64_t bytes = static_cast<int64_t>(tensor::itemsize(weight.defined() ? weight.dtype() : tensor::DType::Float32));
  for (int64_t d : out) fits = fits && !__builtin_mul_overflow(bytes, std::max<int64_t>(d, 1), &bytes);
  if (!fits) {
    throw Error(at() + "expected an output whose size in bytes fits in int64, got " + tensor::shape_str(out) +
                " for input " + tensor::shape_str(input) + " with kernel " + join(used(s.k, s.nd), "x") + ", stride " +
                join(used(s.stride, s.nd), "x") + ", padding " + join(used(s.pad, s.nd), "x") +
                (transposed_ ? ", adj " + join(used(s.adj, s.nd), "x") : "") + " and dilation " +
                join(used(s.dilation, s.nd), "x"));
  }
  return out;
}

void ConvolutionBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  checkInput(input, "input", method);
  checkInput(gradOutput, "gradOutput", method);
  checkGradOutputSizes(spec(), input.sizes(), gradOutput.sizes(), method);
}

void ConvolutionBase::checkGradOutputSizes(const Shape& input, const Shape& gradOutput, const char* method) const {
  checkGradOutputSizes(spec(), input, gradOutput, method);
}

void ConvolutionBase::checkGradOutputSizes(const ConvSpec& s, const Shape& input, const Shape& gradOutput,
                                           const char* method) const {
  const Shape expected = outputSizes(s, input, method);
  if (gradOutput != expected) {
    throw Error(where(method) + "expected gradOutput of " + tensor::shape_str(expected) + " (for input " +
                tensor::shape_str(input) + "), got " + tensor::shape_str(gradOutput));
  }
}

kernels::ConvGeometry ConvolutionBase::geometry(const ConvSpec& s, const Shape& inputShape,
                                                const Shape& outputShape) const {
  const bool batched = static_cast<int>(inputShape.size()) == s.nd + 2;
  const size_t first_spatial = batched ? 2 : 1;
  kernels::ConvGeometry g;
  static_cast<ConvSpec&>(g) = s;
  g.batch = batched ? inputShape[0] : 1;
  // the kernels' image side is the large one (Note [Transposed convolution as the adjoint])
  const Shape& image = transposed_ ? outputShape : inputShape;
  const Shape& other = transposed_ ? inputShape : outputShape;
  g.inC = transposed_ ? nOutputPlane : nInputPlane;
  g.outC = transposed_ ? nInputPlane : nOutputPlane;
  for (int i = 0; i < s.nd; ++i) {
    g.in[s.first() + i] = image[first_spatial + i];
    g.out[s.first() + i] = other[first_spatial + i];
  }
  return g;
}

const Tensor& ConvolutionBase::updateOutput(const Tensor& input) {
  const ConvSpec s = spec();
  checkInput(input, "input", "updateOutput");
  const Shape outShape = outputSizes(s, input.sizes(), "updateOutput");
  const Tensor x = input.contiguous();
  const Tensor w = weight.contiguous();
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  const kernels::ConvGeometry g = geometry(s, x.sizes(), outShape);
  ensure(output, outShape, x);
  const auto pass = transposed_ ? ConvPass::BackwardData : ConvPass::Forward;
  ensure(columns_, {std::max<int64_t>(1, kernels::conv_workspace_size(g, pass))}, x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* bp = b.defined() ? b.data<T>() : nullptr;
    if (transposed_) {
      kernels::conv_backward_data<T>(g, x.data<T>(), w.data<T>(), bp, output.data<T>(), columns_.data<T>());
    } else {
      kernels::conv_forward<T>(g, x.data<T>(), w.data<T>(), bp, output.data<T>(), columns_.data<T>());
    }
  });
  return output;
}

const Tensor& ConvolutionBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const ConvSpec s = spec();
  checkInput(input, "input", "updateGradInput");
  checkInput(gradOutput, "gradOutput", "updateGradInput");
  checkGradOutputSizes(s, input.sizes(), gradOutput.sizes(), "updateGradInput");
  const Tensor gy = gradOutput.contiguous();
  const Tensor w = weight.contiguous();
  const kernels::ConvGeometry g = geometry(s, input.sizes(), gy.sizes());
  ensure(gradInput, input.sizes(), input);
  const auto pass = transposed_ ? ConvPass::Forward : ConvPass::BackwardData;
  ensure(columns_, {std::max<int64_t>(1, kernels::conv_workspace_size(g, pass))}, input);
  tensor::dispatch_f32_f64(input.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (transposed_) {
      kernels::conv_forward<T>(g, gy.data<T>(), w.data<T>(), nullptr, gradInput.data<T>(), columns_.data<T>());
    } else {
      kernels::conv_backward_data<T>(g, gy.data<T>(), w.data<T>(), nullptr, gradInput.data<T>(),
                                     columns_.data<T>());
    }
  });
  return gradInput;
}

void ConvolutionBase::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const ConvSpec s = spec();
  checkInput(input, "input", "accGradParameters");
  checkInput(gradOutput, "gradOutput", "accGradParameters");
  checkGradOutputSizes(s, input.sizes(), gradOutput.sizes(), "accGradParameters");
  checkGradients(s, "accGradParameters");
  const Tensor x = input.contiguous();
  const Tensor gy = gradOutput.contiguous();
  const kernels::ConvGeometry g = geometry(s, x.sizes(), gy.sizes());
  ensure(columns_, {std::max<int64_t>(1, kernels::conv_workspace_size(g, ConvPass::BackwardFilter))}, x);
  Tensor gw = gradWeight.contiguous();
  Tensor gb = gradBias.defined() ? gradBias.contiguous() : Tensor();
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T* image = transposed_ ? gy.data<T>() : x.data<T>();
    const T* other = transposed_ ? x.data<T>() : gy.data<T>();
    kernels::conv_backward_weight<T>(g, image, other, static_cast<T>(scale), gw.data<T>(), columns_.data<T>());
    if (gb.defined() && gy.numel() > 0) {  // an empty batch adds nothing (and must not divide by 0)
      const int64_t spatial = gy.numel() / (g.batch * nOutputPlane);
      kernels::bias_backward<T>(gy.data<T>(), g.batch, nOutputPlane, spatial, static_cast<T>(scale), gb.data<T>());
    }
  });
  if (!gw.is_same_view(gradWeight)) gradWeight.copy_(gw);
  if (gb.defined() && !gb.is_same_view(gradBias)) gradBias.copy_(gb);
}

std::string ConvolutionBase::describe(const std::vector<int>& order_in, bool alwaysShowDilation) const {
  const ConvSpec s = spec();
  std::vector<int> order = order_in;
  if (order.empty()) {
    for (int i = 0; i < s.nd; ++i) order.push_back(i);
  }
  auto pick = [&](const Dims& a) {
    std::vector<int64_t> v;
    for (int i : order) v.push_back(a[s.first() + i]);
    return v;
  };
  auto any_not = [](const std::vector<int64_t>& v, int64_t value) {
    for (int64_t x : v)
      if (x != value) return true;
    return false;
  };
  const auto k = pick(s.k), stride = pick(s.stride), pad = pick(s.pad), adj = pick(s.adj), dil = pick(s.dilation);
  std::string out = type_name() + "(" + std::to_string(nInputPlane) + " -> " + std::to_string(nOutputPlane) + ", " +
                    join(k, "x");
  if (any_not(stride, 1) || any_not(pad, 0)) out += ", " + join(stride, ",");
  if (any_not(pad, 0)) out += ", " + join(pad, ",");
  if (any_not(adj, 0)) out += ", " + join(adj, ",");
  if (alwaysShowDilation || any_not(dil, 1)) out += ", " + join(dil, ",");
  if (s.groups != 1) out += ", groups=" + std::to_string(s.groups);
  return out + ")" + (bias.defined() ? "" : " without bias");
}

tensor::Json ConvAlgorithms::config() const {
  return tensor::Json::Object{{"fwd", fwd}, {"bwdFilter", bwdFilter}, {"bwdData", bwdData}, {"fastest", fastest}};
}

ConvAlgorithms ConvAlgorithms::fromConfig(ConfigReader& moduleConfig) {
  ConfigReader c = moduleConfig.object("algo");
  ConvAlgorithms a;
  a.fwd = c.string("fwd", "");
  a.bwdFilter = c.string("bwdFilter", "");
  a.bwdData = c.string("bwdData", "");
  a.fastest = c.flag("fastest", false);
  c.finish();
  return a;
}

}  // namespace nn
