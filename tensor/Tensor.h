// Tensor.h: an n-dimensional view (sizes, strides, offset, dtype) of a shared Storage on
// the CPU or a CUDA device. Views (view, narrow, select, transpose, permute, expand) share
// storage; clone/contiguous/to copy. Operators broadcast like NumPy and run on the device
// the operands live on; operands on different devices or of different dtypes are an error
// that names the operation, shapes, dtypes and devices. Printing follows Torch.
#pragma once

#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/DType.h"
#include "tensor/Generator.h"
#include "tensor/Storage.h"

namespace tensor {

// Note [Memory formats]
// A memory format is a stride order of an ordinary tensor, never a new storage kind: the
// shape stays [N x C x H x W] (or [N x C x D x H x W]) and only the strides change, as
// PyTorch's torch.channels_last. Contiguous is row-major; ChannelsLast is NHWC for 4-d and
// NDHWC for 5-d tensors (strides [HWC, 1, WC, C] and [DHWC, 1, HWC, WC, C]); other ranks
// have no channels-last form and treat ChannelsLast as Contiguous. The cudnn twins keep a
// channels-last input channels-last (cuDNN's NHWC kernels are faster, Tensor Cores want
// them); nn modules accept any strides. A tensor with no elements is in every format.
enum class MemoryFormat { Contiguous, ChannelsLast };

// The dense strides of `shape` in `format` (size-0 and size-1 dims count as 1).
Shape contiguous_strides(const Shape& shape, MemoryFormat format = MemoryFormat::Contiguous);

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  Tensor(StoragePtr storage, int64_t offset, Shape sizes, Shape strides, DType dtype);

  // -- metadata --
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * itemsize(dtype_); }
  int64_t storage_offset() const { return offset_; }
  const StoragePtr& storage() const { return storage_; }
  bool is_contiguous() const;  // row-major; true for every tensor without elements
  bool is_contiguous(MemoryFormat format) const;
  // No two elements share memory and the elements fill [raw_data(), + numel) exactly, in
  // some order of the dims (contiguous, channels-last, a permuted dense view).
  bool is_non_overlapping_and_dense() const;
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  // Same storage, offset, sizes, strides and dtype: the very same view.
  bool is_same_view(const Tensor& o) const {
    return storage_ == o.storage_ && offset_ == o.offset_ && sizes_ == o.sizes_ &&
           strides_ == o.strides_ && dtype_ == o.dtype_;
  }
  // Pointer to the first element. data<T>() checks T against dtype().
  void* raw_data() const;
  template <class T>
  T* data() const {
    TENSOR_CHECK(dtype_ == dtype_v<T>, "Tensor::data: tensor is ", name(dtype_), ", asked for ",
                 name(dtype_v<T>));
    return static_cast<T*>(raw_data());
  }
  std::string description() const;  // "float32 [2 x 3] on cpu": for error messages

  // -- views: share storage --
  Tensor view(Shape shape) const;  // one entry may be -1; needs compatible strides
  Tensor reshape(Shape shape) const;  // a view when possible, else a contiguous copy
  Tensor flatten() const { return reshape({-1}); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // 2-D transpose
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor expand(const Shape& shape) const;  // size-1 dims broadcast with stride 0
  Tensor contiguous() const;                // *this when already contiguous
  Tensor contiguous(MemoryFormat format) const;  // *this when already in format, else a copy
  Tensor clone() const;                     // always a fresh contiguous copy

  // -- copies, devices, dtypes --
  Tensor& copy_(const Tensor& src);  // src broadcastable to this; any device and dtype
  // to(): *this when already there; a channels-last tensor stays channels-last.
  Tensor to(Device device) const;     // *this when already there
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(Device::cpu()); }
  // Makes this a contiguous tensor of `shape`, keeping the storage when it is large enough
  // (the module output buffers rely on this to stop reallocating in steady state).
  Tensor& resize_(const Shape& shape);
  Tensor& resize_as_(const Tensor& other) { return resize_(other.sizes()); }
  Tensor& resize_(const Shape& shape, MemoryFormat format);  // the same, dense in `format`

  // -- filling (in place) --
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& uniform_(double lo = 0.0, double hi = 1.0, Generator& gen = default_generator());
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator& gen = default_generator());
  Tensor& bernoulli_(double p, Generator& gen = default_generator());

  // -- element access (for tests and small host work) --
  double item() const;  // exactly one element, any device
  double get(const Shape& index) const;
  void set(const Shape& index, double value);
  template <class T>
  std::vector<T> to_vector() const;  // row-major, converted to T

  // -- arithmetic (new tensors; broadcasting) --
  Tensor add(const Tensor& other, double alpha = 1.0) const;
  Tensor sub(const Tensor& other, double alpha = 1.0) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor add(double s) const;
  Tensor sub(double s) const { return add(-s); }
  Tensor mul(double s) const;
  Tensor div(double s) const;
  Tensor pow(double exponent) const;
  Tensor clamp(double lo, double hi) const;
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor square() const;
  Tensor reciprocal() const;
  Tensor sign() const;
  Tensor relu() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;

  // -- in place (other broadcast to this) --
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& sub_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(const Tensor& other);
  Tensor& div_(const Tensor& other);
  Tensor& add_(double s);
  Tensor& mul_(double s);
  Tensor& div_(double s) { return mul_(1.0 / s); }
  Tensor& clamp_(double lo, double hi);
  Tensor& sqrt_();
  Tensor& neg_();
  Tensor& addcmul_(const Tensor& a, const Tensor& b, double value = 1.0);  // this += value*a*b
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, double value = 1.0);  // this += value*a/b

  // -- comparisons: UInt8 0/1 --
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor eq(double s) const;
  Tensor ne(double s) const;
  Tensor lt(double s) const;
  Tensor le(double s) const;
  Tensor gt(double s) const;
  Tensor ge(double s) const;

  // -- reductions: a 0-dim tensor, or over one dim --
  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // values, Int64 indices
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  double norm() const;  // Euclidean, as double

  // -- linear algebra (2-D) --
  Tensor matmul(const Tensor& other) const;  // CPU; CUDA tensors use cudnn's cuBLAS ops

  std::string str() const;  // Torch-style printing

 private:
  void compute_numel();

  StoragePtr storage_;
  int64_t offset_ = 0;
  Shape sizes_;
  Shape strides_;
  DType dtype_ = DType::Float32;
  int64_t numel_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator+(const Tensor& a, double s) { return a.add(s); }
inline Tensor operator-(const Tensor& a, double s) { return a.add(-s); }
inline Tensor operator*(const Tensor& a, double s) { return a.mul(s); }
inline Tensor operator/(const Tensor& a, double s) { return a.div(s); }
inline Tensor operator*(double s, const Tensor& a) { return a.mul(s); }
inline Tensor operator-(const Tensor& a) { return a.neg(); }
// out = a + alpha * b, written into an existing `out` of the same shape, dtype and device (a
// and b broadcast to it): one pass where copy_(a) then add_(b) takes two. `out` may be a or b
// itself, but must not partly overlap either.
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, double alpha = 1.0);

// -- creation --
Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32,
            Device device = Device::cpu());
Tensor empty(const Shape& shape, DType dtype, Device device, MemoryFormat format);
// A tensor of t's shape, dtype and device; a dense t's strides are kept (PyTorch's
// preserve_format), any other t gives suggest_memory_format(t).
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
// ChannelsLast when t is a 4-d or 5-d tensor laid out channels-last (and not also
// row-major, as a tensor with C == 1 or H == W == 1 can be), else Contiguous.
MemoryFormat suggest_memory_format(const Tensor& t);
// Both tensors are non-overlapping and dense with the same shape and strides (size-1 dims
// aside), so their elements pair up as two flat blocks of numel() items from raw_data(): what
// element-wise kernels over many tensors (the fused optimizers) need of each pair.
bool same_dense_layout(const Tensor& a, const Tensor& b);
// A 1-d view of all of a dense tensor's elements in memory order (row-major, channels-last, any
// dense permutation): element-wise work where every operand shares one layout, and collectives
// that pair elements by position. Throws for a tensor that is not dense.
Tensor flat_view(const Tensor& t);
Tensor arange(double end, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::Float32,
              Device device = Device::cpu());
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen = default_generator(),
               DType dtype = DType::Float32, Device device = Device::cpu());
Tensor normal(const Shape& shape, double mean, double std, Generator& gen = default_generator(),
              DType dtype = DType::Float32, Device device = Device::cpu());
Tensor scalar_tensor(double value, DType dtype = DType::Float32, Device device = Device::cpu());
// A CPU tensor holding `values` (row-major) in dtype_v<T>, of `shape` ({n} when empty).
template <class T>
Tensor from_vector(const std::vector<T>& values, Shape shape = {});
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& indices);  // Int64 indices

// -- comparison helpers for tests (computed in float64 on the CPU) --
double max_abs_diff(const Tensor& a, const Tensor& b);
// max |a-b| / max(|a|, |b|, 1) over elements (Caffe's scaled relative error)
double max_rel_error(const Tensor& a, const Tensor& b);
// ||a - b|| / ||b||
double rel_norm_error(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool has_nonfinite(const Tensor& t);

// Broadcast shape of two shapes (NumPy rules); throws naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace tensor
