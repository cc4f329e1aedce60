// PoolingBase.cpp: checks, output sizes and printing for all pooling modules; the compute is in
// nn/kernels/Pooling.cpp.
#include "nn/PoolingBase.h"

#include <algorithm>

#include "nn/Buffers.h"

namespace nn {

namespace {

// "a x b" style joins of a window's entries in the order `order` picks.
std::string join(const std::array<int64_t, 3>& v, const std::vector<int>& order, const char* sep) {
  std::string s;
  for (size_t i = 0; i < order.size(); ++i) s += (i ? sep : "") + std::to_string(v[order[i]]);
  return s;
}

// A stride key of config(): required, or strideFallback where a file may leave it out.
int64_t stride(ConfigReader& c, const char* key, std::optional<int64_t> strideFallback) {
  return strideFallback ? c.integer(key, *strideFallback) : c.integer(key);
}

// Torch's constructor order: (kW, kH) and (kT, kW, kH); the Window holds (T, H, W).
std::vector<int> torch_order(int dims) { return dims == 2 ? std::vector<int>{2, 1} : std::vector<int>{0, 2, 1}; }
std::vector<int> tensor_order(int dims) { return dims == 2 ? std::vector<int>{1, 2} : std::vector<int>{0, 1, 2}; }

}  // namespace

void PoolingBase::checkArguments(const char* method) const {
  const Window w = window();
  const std::string prefix = method ? where(method) : type_name() + ": ";
  const auto order = torch_order(w.dims);
  auto got = [&] {
    return "got kernel " + join(w.k, order, "x") + ", stride " + join(w.d, order, ",") + ", padding " +
           join(w.pad, order, ",");
  };
  for (int i = 0; i < 3; ++i) {
    if (w.k[i] < 1 || w.d[i] < 1 || w.pad[i] < 0) {
      throw Error(prefix + "expected kernel and stride >= 1 and padding >= 0, " + got());
    }
    if (w.pad[i] > w.k[i] / 2) throw Error(prefix + "expected padding <= kernel / 2, " + got());
  }
}

Shape PoolingBase::outputShape(const Tensor& input, const char* method) const {
  checkArguments(method);
  const Window w = window();
  const int64_t rank = input.dim();
  if (rank != w.dims + 1 && rank != w.dims + 2) {
    throw Error(
        where(method) + "expected " +
        (w.dims == 2 ? "3D [C x H x W] or 4D [N x C x H x W]" : "4D [C x T x H x W] or 5D [N x C x T x H x W]") +
        " input, got " + tensor::shape_str(input.sizes()));
  }
  Shape out = input.sizes();
  const int64_t first = rank - w.dims;  // first spatial dim of the input
  const int lead = 3 - w.dims;          // its slot in the (T, H, W) window
  bool too_small = false;
  for (int i = 0; i < w.dims; ++i) {
    const int64_t in = input.size(first + i);
    if (in < 1) throw Error(where(method) + "expected non-empty spatial dims, got " + tensor::shape_str(input.sizes()));
    const int s = lead + i;
    out[first + i] = kernels::pool_output_size(in, w.k[s], w.d[s], w.pad[s], ceil_mode);
    too_small = too_small || out[first + i] < 1;
  }
  if (too_small) {
    // The smallest padded size with one window: the kernel, or in ceil mode one element of
    // the first window's last stride step.
    std::array<int64_t, 3> least{};
    for (int s = 0; s < 3; ++s) least[s] = ceil_mode ? std::max<int64_t>(w.k[s] - w.d[s] + 1, 1) : w.k[s];
    throw Error(where(method) + "expected input of at least " + join(least, tensor_order(w.dims), "x") +
                " (with padding), got " + tensor::shape_str(input.sizes()) + ": calculated output size " +
                tensor::shape_str(out) + " is too small");
  }
  return out;
}

Shape PoolingBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const Shape shape = outputShape(input, method);
  if (!gradOutput.defined()) throw Error(where(method) + "gradOutput is undefined");
  check_matches(where(method), gradOutput, input, "gradOutput", "input");
  if (gradOutput.sizes() != shape) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(shape) + ", got " +
                tensor::shape_str(gradOutput.sizes()));
  }
  return shape;
}

std::string PoolingBase::str() const {
  const Window w = window();
  const auto order = torch_order(w.dims);
  std::string s = type_name() + "(" + join(w.k, order, "x") + ", " + join(w.d, order, ",");
  if (w.pad[0] || w.pad[1] || w.pad[2]) s += ", " + join(w.pad, order, ",");
  return s + ")";
}

kernels::PoolGeometry PoolingBase::geometry(const Tensor& input, const Shape& outShape) const {
  const Window w = window();
  kernels::PoolGeometry g;
  const int64_t first = input.dim() - w.dims;
  g.planes = 1;
  for (int64_t i = 0; i < first; ++i) g.planes *= input.size(i);
  for (int i = 0; i < w.dims; ++i) {
    const int s = 3 - w.dims + i;
    g.in[s] = input.size(first + i);
    g.out[s] = outShape[first + i];
  }
  for (int s = 0; s < 3; ++s) {
    g.k[s] = w.k[s];
    g.d[s] = w.d[s];
    g.pad[s] = w.pad[s];
  }
  return g;
}

const Tensor& PoolingBase::maxForward(const Tensor& input, Tensor& indices) {
  check_float(where("updateOutput"), input);
  const Shape shape = outputShape(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, shape, x);
  if (!indices.defined() || indices.dtype() != DType::Int64 || !indices.is_cpu()) {
    indices = tensor::empty(shape, DType::Int64);
  } else {
    indices.resize_(shape);
  }
  maxInputShape_ = x.sizes();
  const kernels::PoolGeometry g = geometry(x, shape);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::max_pool_forward<T>(g, x.data<T>(), output.data<T>(), indices.data<int64_t>());
  });
  return output;
}

const Tensor& PoolingBase::maxBackward(const Tensor& input, const Tensor& gradOutput, const Tensor& indices) {
  check_float(where("updateGradInput"), input);
  const Shape shape = checkGradOutput(input, gradOutput, "updateGradInput");
  // The indices are offsets into the planes of the forward input: another input would read
  // or write out of place.
  if (!indices.defined() || indices.sizes() != shape || maxInputShape_ != input.sizes()) {
    throw Error(where("updateGradInput") + "expected updateOutput to have run on an input of this shape, got input " +
                tensor::shape_str(input.sizes()) + " after updateOutput on " +
                (indices.defined() ? tensor::shape_str(maxInputShape_) : std::string("nothing")));
  }
  const Tensor gy = gradOutput.contiguous();
  ensure(gradInput, input.sizes(), input);
  const kernels::PoolGeometry g = geometry(input, shape);
  tensor::dispatch_f32_f64(input.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::max_pool_backward<T>(g, gy.data<T>(), indices.data<int64_t>(), gradInput.data<T>());
  });
  return gradInput;
}

const Tensor& PoolingBase::averageForward(const Tensor& input, bool count_include_pad) {
  check_float(where("updateOutput"), input);
  const Shape shape = outputShape(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, shape, x);
  const kernels::PoolGeometry g = geometry(x, shape);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::avg_pool_forward<T>(g, count_include_pad, x.data<T>(), output.data<T>());
  });
  return output;
}

const Tensor& PoolingBase::averageBackward(const Tensor& input, const Tensor& gradOutput, bool count_include_pad) {
  check_float(where("updateGradInput"), input);
  const Shape shape = checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor gy = gradOutput.contiguous();
  ensure(gradInput, input.sizes(), input);
  const kernels::PoolGeometry g = geometry(input, shape);
  tensor::dispatch_f32_f64(input.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::avg_pool_backward<T>(g, count_include_pad, gy.data<T>(), gradInput.data<T>());
  });
  return gradInput;
}

std::array<int64_t, 6> SpatialPooling::readFields(ConfigReader& c, std::optional<int64_t> strideFallback) {
  const int64_t kW = c.integer("kW"), kH = c.integer("kH");
  const int64_t dW = stride(c, "dW", strideFallback), dH = stride(c, "dH", strideFallback);
  return {kW, kH, dW, dH, c.integer("padW", 0), c.integer("padH", 0)};
}

std::array<int64_t, 9> VolumetricPooling::readFields(ConfigReader& c, std::optional<int64_t> strideFallback) {
  const int64_t kT = c.integer("kT"), kW = c.integer("kW"), kH = c.integer("kH");
  const int64_t dT = stride(c, "dT", strideFallback), dW = stride(c, "dW", strideFallback);
  const int64_t dH = stride(c, "dH", strideFallback);
  return {kT, kW, kH, dT, dW, dH, c.integer("padT", 0), c.integer("padW", 0), c.integer("padH", 0)};
}

tensor::Json SpatialPooling::config() const {
  return tensor::Json::Object{
      {"kW", kW}, {"kH", kH}, {"dW", dW}, {"dH", dH}, {"padW", padW}, {"padH", padH}, {"ceil_mode", ceil_mode}};
}

tensor::Json VolumetricPooling::config() const {
  return tensor::Json::Object{{"kT", kT}, {"kW", kW},     {"kH", kH},     {"dT", dT},     {"dW", dW},
                              {"dH", dH}, {"padT", padT}, {"padW", padW}, {"padH", padH}, {"ceil_mode", ceil_mode}};
}

}  // namespace nn
