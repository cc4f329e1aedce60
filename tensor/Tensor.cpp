// Tensor.cpp: metadata, views, copies across devices and dtypes, and the operator layer
// that validates operands and hands them to a kernel backend (tensor/Kernels.h).
#include "tensor/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "tensor/Blas.h"
#include "tensor/Cuda.h"
#include "tensor/Kernels.h"

namespace tensor {

using kernels::Binary;
using kernels::Reduce;
using kernels::Unary;

namespace {
// The dims of a `rank`-d tensor from the fastest-varying to the slowest in `format`.
std::vector<size_t> format_order(size_t rank, MemoryFormat format) {
  std::vector<size_t> order;
  if (format == MemoryFormat::ChannelsLast && (rank == 4 || rank == 5)) {
    order.push_back(1);                                  // C
    for (size_t d = rank; d-- > 2;) order.push_back(d);  // W, H (, D)
    order.push_back(0);                                  // N
  } else {
    for (size_t d = rank; d-- > 0;) order.push_back(d);
  }
  return order;
}
}  // namespace

Shape contiguous_strides(const Shape& sizes, MemoryFormat format) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (const size_t d : format_order(sizes.size(), format)) {
    strides[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

namespace {

int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim;
  const int64_t hi = ndim == 0 ? 0 : ndim - 1;
  TENSOR_CHECK(d >= lo && d <= hi, op, ": dimension ", d, " out of range for a ", ndim,
               "-d tensor (expected ", lo, "..", hi, ")");
  return d < 0 ? d + std::max<int64_t>(ndim, 1) : d;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  TENSOR_CHECK(a.device() == b.device(), op, ": operands on different devices: ", a.description(),
               " and ", b.description());
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  TENSOR_CHECK(a.dtype() == b.dtype(), op, ": operands of different dtypes: ", a.description(),
               " and ", b.description(), " (convert one with .to(dtype))");
}

void check_defined(const Tensor& t, const char* op) {
  TENSOR_CHECK(t.defined(), op, ": tensor is undefined");
}

// Resolves a -1 entry and checks the element count (view, reshape).
Shape infer_shape(const Shape& shape, int64_t numel, const Shape& from, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TENSOR_CHECK(infer_at < 0, op, ": only one dimension can be -1, got ", shape_str(shape));
      infer_at = static_cast<int>(i);
    } else {
      TENSOR_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in ", shape_str(shape));
      // an overflowing product cannot equal numel (which fits): refuse it as a mismatch
      TENSOR_CHECK(!__builtin_mul_overflow(known, out[i], &known), op, ": cannot view ", shape_str(from), " (",
                   numel, " elements) as ", shape_str(shape), ": its element count overflows int64");
    }
  }
  if (infer_at >= 0) {
    TENSOR_CHECK(known != 0 && numel % known == 0, op, ": cannot view ", shape_str(from), " (",
                 numel, " elements) as ", shape_str(shape));
    out[infer_at] = numel / known;
  }
  TENSOR_CHECK(shape_numel(out, op) == numel, op, ": cannot view ", shape_str(from), " (", numel,
               " elements) as ", shape_str(shape));
  return out;
}

// Strides that let a tensor of (sizes, strides) be seen as `shape` without copying, if any
// (the chunking rule PyTorch documents for view()).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& shape) {
  Shape out(shape.size());
  if (sizes.empty()) {
    std::fill(out.begin(), out.end(), 1);
    return out;
  }
  if (shape_numel(sizes) == 0) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= sizes[tensor_d];
    if (tensor_d == 0 || (sizes[tensor_d - 1] != 1 &&
                          strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// tensor::empty's size check of an operation's result, with an error that names the
// operation and its operands' shapes, not only "tensor::empty".
void check_result(const Shape& shape, DType dtype, const char* name, const Shape& a, const Shape& b) {
  try {
    shape_nbytes(shape, dtype, name);
  } catch (const Error&) {
    const std::string op = detail::concat(name, ": the result of ", shape_str(a), " and ", shape_str(b));
    shape_nbytes(shape, dtype, op.c_str());  // throws again, saying why
    throw;
  }
}

Tensor binary_op(Binary op, const Tensor& a, const Tensor& b, double alpha, const char* name) {
  check_defined(a, name);
  check_defined(b, name);
  check_same_device(a, b, name);
  check_same_dtype(a, b, name);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  const bool is_cmp = op >= Binary::Eq;
  // the result takes the layout of an operand of its shape (a channels-last one stays so)
  const MemoryFormat format = suggest_memory_format(a.sizes() == shape ? a : b.sizes() == shape ? b : Tensor());
  check_result(shape, is_cmp ? DType::UInt8 : a.dtype(), name, a.sizes(), b.sizes());
  Tensor out = empty(shape, is_cmp ? DType::UInt8 : a.dtype(), a.device(), format);
  kernels::backend_for(a).binary(op, a.expand(shape), b.expand(shape), out, alpha);
  return out;
}

Tensor& binary_inplace(Binary op, Tensor& self, const Tensor& b, double alpha, const char* name) {
  check_defined(self, name);
  check_defined(b, name);
  check_same_device(self, b, name);
  check_same_dtype(self, b, name);
  const Shape shape = broadcast_shapes(self.sizes(), b.sizes(), name);
  TENSOR_CHECK(shape == self.sizes(), name, ": cannot broadcast ", shape_str(b.sizes()),
               " into the in-place operand ", shape_str(self.sizes()));
  kernels::backend_for(self).binary(op, self, b.expand(shape), self, alpha);
  return self;
}

// a and b against the tensor `self` that receives the result: defined, one device and dtype,
// both broadcasting to self's shape. `role` names self in the error.
void check_ternary(const Tensor& self, const Tensor& a, const Tensor& b, const char* name,
                   const char* role = "the in-place operand") {
  check_defined(self, name);
  check_defined(a, name);
  check_defined(b, name);
  check_same_device(self, a, name);
  check_same_device(self, b, name);
  check_same_dtype(self, a, name);
  check_same_dtype(self, b, name);
  const Shape shape = broadcast_shapes(broadcast_shapes(self.sizes(), a.sizes(), name), b.sizes(), name);
  TENSOR_CHECK(shape == self.sizes(), name, ": cannot broadcast ", shape_str(a.sizes()), " and ", shape_str(b.sizes()),
               " into ", role, " ", shape_str(self.sizes()));
}

Tensor& binary_into(Binary op, Tensor& out, const Tensor& a, const Tensor& b, double alpha, const char* name) {
  check_ternary(out, a, b, name, "the result");
  kernels::backend_for(out).binary(op, a.expand(out.sizes()), b.expand(out.sizes()), out, alpha);
  return out;
}

Tensor scalar_op(Binary op, const Tensor& a, double s, const char* name) {
  check_defined(a, name);
  const bool is_cmp = op >= Binary::Eq;
  Tensor out = empty(a.sizes(), is_cmp ? DType::UInt8 : a.dtype(), a.device(), suggest_memory_format(a));
  kernels::backend_for(a).binary_scalar(op, a, s, false, out);
  return out;
}

Tensor unary_op(Unary op, const Tensor& a, const char* name) {
  check_defined(a, name);
  Tensor out = empty(a.sizes(), a.dtype(), a.device(), suggest_memory_format(a));
  kernels::backend_for(a).unary(op, a, out);
  return out;
}

struct ReduceShape {
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};

ReduceShape reduce_shape(const Tensor& t, int64_t dim, bool keepdim) {
  ReduceShape r;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i < dim) r.outer *= t.size(i);
    if (i == dim) r.n = t.size(i);
    if (i > dim) r.inner *= t.size(i);
    if (i != dim || keepdim) r.out_shape.push_back(i == dim ? 1 : t.size(i));
  }
  return r;
}

// Sums of UInt8 would overflow: they are taken in Int64, as NumPy and PyTorch do.
Tensor reducible(const Tensor& t) { return t.dtype() == DType::UInt8 ? t.to(DType::Int64) : t; }

std::pair<Tensor, Tensor> extremum(const Tensor& self, int64_t dim, bool keepdim, Reduce op,
                                   const char* name) {
  check_defined(self, name);
  const int64_t d = wrap_dim(dim, self.dim(), name);
  const Tensor in = self.contiguous();
  const ReduceShape r = self.dim() == 0 ? ReduceShape{1, 1, 1, {}} : reduce_shape(in, d, keepdim);
  TENSOR_CHECK(r.n > 0, name, ": cannot reduce over an empty dimension of ", self.description());
  Tensor values = empty(r.out_shape, self.dtype(), self.device());
  Tensor indices = empty(r.out_shape, DType::Int64, self.device());
  kernels::backend_for(self).reduce(op, in, r.outer, r.n, r.inner, values, indices);
  return {values, indices};
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TENSOR_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ",
                 shape_str(b), " cannot broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ------------------------------------------------------------------------------ metadata

Tensor::Tensor(StoragePtr storage, int64_t offset, Shape sizes, Shape strides, DType dtype)
    : storage_(std::move(storage)),
      offset_(offset),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      dtype_(dtype) {
  TENSOR_CHECK(sizes_.size() == strides_.size(), "Tensor: ", sizes_.size(), " sizes but ",
               strides_.size(), " strides");
  compute_numel();
}

// See Note [Checked sizes] (DType.cpp): every view's shape is checked once, here.
void Tensor::compute_numel() {
  numel_ = static_cast<int64_t>(shape_nbytes(sizes_, dtype_, "tensor::Tensor") / itemsize(dtype_));
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

int64_t Tensor::size(int64_t d) const { return sizes_[wrap_dim(d, dim(), "Tensor::size")]; }

int64_t Tensor::stride(int64_t d) const { return strides_[wrap_dim(d, dim(), "Tensor::stride")]; }

bool Tensor::is_contiguous() const { return is_contiguous(MemoryFormat::Contiguous); }

// A tensor without elements is in every format: contiguous_strides counts a size-0 dim as 1,
// so a check of its strides could disagree with what contiguous() just made.
bool Tensor::is_contiguous(MemoryFormat format) const {
  if (numel_ == 0) return true;
  int64_t expected = 1;
  for (const size_t d : format_order(sizes_.size(), format)) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (numel_ == 0) return true;
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes_.size(); ++d) {
    if (sizes_[d] != 1) order.push_back(d);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides_[a] < strides_[b]; });
  int64_t expected = 1;
  for (const size_t d : order) {
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.defined() && (t.dim() == 4 || t.dim() == 5) && !t.is_contiguous() &&
      t.is_contiguous(MemoryFormat::ChannelsLast)) {
    return MemoryFormat::ChannelsLast;
  }
  return MemoryFormat::Contiguous;
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || !a.is_non_overlapping_and_dense() || !b.is_non_overlapping_and_dense()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) != 1 && a.strides()[d] != b.strides()[d]) return false;
  }
  return true;
}

Tensor flat_view(const Tensor& t) {
  if (t.is_contiguous()) return t.view({t.numel()});
  if (!t.is_non_overlapping_and_dense()) {
    throw Error("flat_view: expected a dense tensor, got " + t.description() + " with strides " +
                shape_str(t.strides()));
  }
  return Tensor(t.storage(), t.storage_offset(), {t.numel()}, {1}, t.dtype());
}

void* Tensor::raw_data() const {
  check_defined(*this, "Tensor::raw_data");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
}

std::string Tensor::description() const {
  if (!defined()) return "undefined tensor";
  return detail::concat(name(dtype_), " ", shape_str(sizes_), " on ", device().str());
}

// ------------------------------------------------------------------------------ views

Tensor Tensor::view(Shape shape) const {
  check_defined(*this, "Tensor::view");
  const Shape target = infer_shape(shape, numel_, sizes_, "Tensor::view");
  auto strides = view_strides(sizes_, strides_, target);
  TENSOR_CHECK(strides.has_value(), "Tensor::view: cannot view ", shape_str(sizes_),
               " with strides ", shape_str(strides_), " as ", shape_str(target),
               " without a copy (use reshape)");
  return Tensor(storage_, offset_, target, *strides, dtype_);
}

Tensor Tensor::reshape(Shape shape) const {
  check_defined(*this, "Tensor::reshape");
  const Shape target = infer_shape(shape, numel_, sizes_, "Tensor::reshape");
  if (auto strides = view_strides(sizes_, strides_, target)) {
    return Tensor(storage_, offset_, target, *strides, dtype_);
  }
  return contiguous().view(target);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  check_defined(*this, "Tensor::narrow");
  TENSOR_CHECK(dim() > 0, "Tensor::narrow: cannot narrow a 0-d tensor");
  d = wrap_dim(d, dim(), "Tensor::narrow");
  TENSOR_CHECK(start >= 0 && length >= 0 && start <= sizes_[d] && length <= sizes_[d] - start,
               "Tensor::narrow: range of length ", length, " at ", start, " out of bounds for dimension ", d,
               " of ", shape_str(sizes_));
  Shape sizes = sizes_;
  sizes[d] = length;
  return Tensor(storage_, offset_ + start * strides_[d], sizes, strides_, dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  check_defined(*this, "Tensor::select");
  TENSOR_CHECK(dim() > 0, "Tensor::select: cannot select from a 0-d tensor");
  d = wrap_dim(d, dim(), "Tensor::select");
  const int64_t n = sizes_[d];
  TENSOR_CHECK(index >= -n && index < n, "Tensor::select: index ", index,
               " out of range for dimension ", d, " of ", shape_str(sizes_));
  if (index < 0) index += n;
  Shape sizes = sizes_, strides = strides_;
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return Tensor(storage_, offset_ + index * strides_[d], sizes, strides, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  check_defined(*this, "Tensor::transpose");
  d0 = wrap_dim(d0, dim(), "Tensor::transpose");
  d1 = wrap_dim(d1, dim(), "Tensor::transpose");
  if (dim() == 0) return *this;
  Shape sizes = sizes_, strides = strides_;
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return Tensor(storage_, offset_, sizes, strides, dtype_);
}

Tensor Tensor::t() const {
  TENSOR_CHECK(dim() == 2, "Tensor::t: expected a 2-d tensor, got ", description());
  return transpose(0, 1);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  check_defined(*this, "Tensor::permute");
  TENSOR_CHECK(static_cast<int64_t>(order.size()) == dim(), "Tensor::permute: ", order.size(),
               " dims given for a ", dim(), "-d tensor");
  Shape sizes(order.size()), strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t d = wrap_dim(order[i], dim(), "Tensor::permute");
    TENSOR_CHECK(!seen[d], "Tensor::permute: dimension ", d, " repeated");
    seen[d] = true;
    sizes[i] = sizes_[d];
    strides[i] = strides_[d];
  }
  return Tensor(storage_, offset_, sizes, strides, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  check_defined(*this, "Tensor::unsqueeze");
  d = wrap_dim(d, dim() + 1, "Tensor::unsqueeze");
  Shape sizes = sizes_, strides = strides_;
  const int64_t stride = d < dim() ? sizes_[d] * strides_[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Tensor(storage_, offset_, sizes, strides, dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  check_defined(*this, "Tensor::squeeze");
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim(), "Tensor::squeeze");
  if (sizes_[d] != 1) return *this;
  return select(d, 0);
}

Tensor Tensor::squeeze() const {
  check_defined(*this, "Tensor::squeeze");
  Shape sizes, strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (sizes_[i] != 1) {
      sizes.push_back(sizes_[i]);
      strides.push_back(strides_[i]);
    }
  }
  return Tensor(storage_, offset_, sizes, strides, dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  check_defined(*this, "Tensor::expand");
  TENSOR_CHECK(shape.size() >= sizes_.size(), "Tensor::expand: cannot expand ", shape_str(sizes_),
               " to fewer dimensions ", shape_str(shape));
  if (shape == sizes_) return *this;
  const size_t lead = shape.size() - sizes_.size();
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) continue;
    const int64_t own = sizes_[i - lead];
    TENSOR_CHECK(own == shape[i] || own == 1, "Tensor::expand: cannot expand ", shape_str(sizes_),
                 " to ", shape_str(shape));
    strides[i] = own == shape[i] ? strides_[i - lead] : 0;
  }
  try {
    return Tensor(storage_, offset_, shape, strides, dtype_);
  } catch (const Error&) {  // the view's own check names tensor::Tensor, not the expand
    const std::string op =
        detail::concat("Tensor::expand: cannot expand ", shape_str(sizes_), " to ", shape_str(shape));
    shape_nbytes(shape, dtype_, op.c_str());  // throws again, saying why
    throw;
  }
}

Tensor Tensor::contiguous() const {
  check_defined(*this, "Tensor::contiguous");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  check_defined(*this, "Tensor::contiguous");
  if (is_contiguous(format)) return *this;
  Tensor out = empty(sizes_, dtype_, device(), format);
  kernels::backend_for(*this).copy(*this, out);
  return out;
}

Tensor Tensor::clone() const {
  check_defined(*this, "Tensor::clone");
  Tensor out = empty(sizes_, dtype_, device());
  kernels::backend_for(*this).copy(*this, out);
  return out;
}

// ------------------------------------------------------------------------------ copies

namespace {
// The bytes a non-empty view's elements occupy in their storage, [first, last].
std::pair<int64_t, int64_t> byte_span(const Tensor& t) {
  int64_t lo = t.storage_offset(), hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  const int64_t item = static_cast<int64_t>(itemsize(t.dtype()));
  return {lo * item, hi * item + item - 1};
}

// Note [Copies between overlapping views]
// dst.copy_(src) where src and dst share memory but are not the same view (t[0:8] from
// t[1:9]) would read elements the copy has already written, and the kernels' memcpy of an
// overlapping range is undefined behaviour (AddressSanitizer's memcpy-param-overlap). Such a
// source is read through a copy of itself first, so the result is the source as it was before
// the call, on every backend. Views whose spans do not intersect, and the same view (a no-op
// copy), go straight through.
bool overlaps_partly(const Tensor& dst, const Tensor& src) {
  if (!dst.shares_storage(src) || dst.is_same_view(src) || dst.numel() == 0 || src.numel() == 0) return false;
  const auto [a_lo, a_hi] = byte_span(dst);
  const auto [b_lo, b_hi] = byte_span(src);
  return a_lo <= b_hi && b_lo <= a_hi;
}
}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined(*this, "Tensor::copy_");
  check_defined(src, "Tensor::copy_");
  const Shape shape = broadcast_shapes(sizes_, src.sizes(), "Tensor::copy_");
  TENSOR_CHECK(shape == sizes_, "Tensor::copy_: cannot copy ", src.description(), " into ",
               description());
  if (numel_ == 0) return *this;
  // Note [Copies between overlapping views]
  const Tensor from = overlaps_partly(*this, src) ? src.clone().expand(sizes_) : src.expand(sizes_);
  if (from.device() == device()) {
    kernels::backend_for(*this).copy(from, *this);
    return *this;
  }
  // Across devices: convert and compact on the source side, move the bytes once, then
  // scatter on the destination side only when the destination is strided.
  TENSOR_CHECK(from.is_cpu() || is_cpu(), "Tensor::copy_: copies between two CUDA devices (",
               from.device().str(), " -> ", device().str(), ") are not supported");
  Tensor packed = from.to(dtype_);
  if (!same_dense_layout(packed, *this)) packed = packed.contiguous();
  Tensor target = same_dense_layout(packed, *this) ? *this : empty(sizes_, dtype_, device());
  const int cuda_index = is_cuda() ? device().index : packed.device().index;
  cuda::copy_bytes(target.raw_data(), target.is_cuda(), packed.raw_data(), packed.is_cuda(),
                   nbytes(), cuda_index);
  if (!target.is_same_view(*this)) kernels::backend_for(*this).copy(target, *this);
  return *this;
}

Tensor Tensor::to(Device device) const {
  check_defined(*this, "Tensor::to");
  if (device == this->device()) return *this;
  Tensor out = empty(sizes_, dtype_, device, suggest_memory_format(*this));
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  check_defined(*this, "Tensor::to");
  if (dtype == dtype_) return *this;
  Tensor out = empty(sizes_, dtype, device(), suggest_memory_format(*this));
  kernels::backend_for(*this).copy(*this, out);
  return out;
}

Tensor Tensor::to(Device device, DType dtype) const {
  check_defined(*this, "Tensor::to");
  if (device == this->device()) return to(dtype);
  Tensor out = empty(sizes_, dtype, device, suggest_memory_format(*this));
  out.copy_(*this);
  return out;
}

Tensor& Tensor::resize_(const Shape& shape) {
  const size_t nbytes = shape_nbytes(shape, dtype_, "Tensor::resize_");
  const size_t offset_bytes = static_cast<size_t>(offset_) * itemsize(dtype_);
  if (!storage_ || storage_->nbytes() < offset_bytes || storage_->nbytes() - offset_bytes < nbytes) {
    storage_ = std::make_shared<Storage>(nbytes, device());
    offset_ = 0;
  }
  sizes_ = shape;
  strides_ = contiguous_strides(shape);
  compute_numel();
  return *this;
}

Tensor& Tensor::resize_(const Shape& shape, MemoryFormat format) {
  resize_(shape);
  strides_ = contiguous_strides(shape, format);
  return *this;
}

// ------------------------------------------------------------------------------ filling

Tensor& Tensor::fill_(double value) {
  check_defined(*this, "Tensor::fill_");
  kernels::backend_for(*this).fill(*this, value);
  return *this;
}

namespace {
Tensor& random_fill(Tensor& self, kernels::Random dist, double p1, double p2, Generator& gen,
                    const char* name) {
  check_defined(self, name);
  TENSOR_CHECK(is_floating(self.dtype()) || dist == kernels::Random::Bernoulli, name,
               ": expected a floating tensor, got ", self.description());
  Tensor target = self.is_contiguous() ? self : empty(self.sizes(), self.dtype(), self.device());
  const auto n = static_cast<uint64_t>(self.numel());
  uint64_t offset = 0;
  // inside a CUDA graph capture: Note [Random fills in CUDA graphs] in Cuda.h
  const uint64_t* state =
      self.is_cuda() ? cuda::Graph::random_state_for_capture(self.device().index, gen, n, offset) : nullptr;
  if (!state) offset = gen.reserve(n);
  kernels::backend_for(self).random(dist, target, p1, p2, gen.seed(), offset, state);
  if (!target.is_same_view(self)) self.copy_(target);
  return self;
}
}  // namespace

Tensor& Tensor::uniform_(double lo, double hi, Generator& gen) {
  TENSOR_CHECK(lo <= hi, "Tensor::uniform_: expected lo <= hi, got ", lo, " > ", hi);
  return random_fill(*this, kernels::Random::Uniform, lo, hi, gen, "Tensor::uniform_");
}

Tensor& Tensor::normal_(double mean, double std, Generator& gen) {
  TENSOR_CHECK(std >= 0, "Tensor::normal_: expected std >= 0, got ", std);
  return random_fill(*this, kernels::Random::Normal, mean, std, gen, "Tensor::normal_");
}

Tensor& Tensor::bernoulli_(double p, Generator& gen) {
  TENSOR_CHECK(p >= 0 && p <= 1, "Tensor::bernoulli_: expected 0 <= p <= 1, got ", p);
  return random_fill(*this, kernels::Random::Bernoulli, p, 0, gen, "Tensor::bernoulli_");
}

// ------------------------------------------------------------------------------ access

double Tensor::item() const {
  check_defined(*this, "Tensor::item");
  TENSOR_CHECK(numel_ == 1, "Tensor::item: expected one element, got ", description());
  Tensor one = scalar_tensor(0.0, DType::Float64);
  one.copy_(reshape({}));
  return *one.data<double>();
}

namespace {
int64_t element_offset(const Tensor& t, const Shape& index, const char* op) {
  TENSOR_CHECK(static_cast<int64_t>(index.size()) == t.dim(), op, ": index ", shape_str(index),
               " has ", index.size(), " entries for a ", t.dim(), "-d tensor");
  int64_t offset = t.storage_offset();
  for (size_t i = 0; i < index.size(); ++i) {
    TENSOR_CHECK(index[i] >= 0 && index[i] < t.sizes()[i], op, ": index ", shape_str(index),
                 " out of range for ", shape_str(t.sizes()));
    offset += index[i] * t.strides()[i];
  }
  return offset;
}
}  // namespace

double Tensor::get(const Shape& index) const {
  check_defined(*this, "Tensor::get");
  return Tensor(storage_, element_offset(*this, index, "Tensor::get"), {}, {}, dtype_).item();
}

void Tensor::set(const Shape& index, double value) {
  check_defined(*this, "Tensor::set");
  Tensor(storage_, element_offset(*this, index, "Tensor::set"), {}, {}, dtype_).fill_(value);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_defined(*this, "Tensor::to_vector");
  const Tensor c = to(Device::cpu(), dtype_v<T>).contiguous();
  std::vector<T> out(static_cast<size_t>(numel_));
  if (numel_ > 0) std::memcpy(out.data(), c.raw_data(), c.nbytes());
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<Half> Tensor::to_vector<Half>() const;
template std::vector<BFloat16> Tensor::to_vector<BFloat16>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

// ------------------------------------------------------------------------------ arithmetic

Tensor Tensor::add(const Tensor& o, double alpha) const { return binary_op(Binary::Add, *this, o, alpha, "Tensor::add"); }
Tensor Tensor::sub(const Tensor& o, double alpha) const { return binary_op(Binary::Sub, *this, o, alpha, "Tensor::sub"); }
Tensor Tensor::mul(const Tensor& o) const { return binary_op(Binary::Mul, *this, o, 1, "Tensor::mul"); }
Tensor Tensor::div(const Tensor& o) const { return binary_op(Binary::Div, *this, o, 1, "Tensor::div"); }
Tensor Tensor::maximum(const Tensor& o) const { return binary_op(Binary::Max, *this, o, 1, "Tensor::maximum"); }
Tensor Tensor::minimum(const Tensor& o) const { return binary_op(Binary::Min, *this, o, 1, "Tensor::minimum"); }
Tensor Tensor::add(double s) const { return scalar_op(Binary::Add, *this, s, "Tensor::add"); }
Tensor Tensor::mul(double s) const { return scalar_op(Binary::Mul, *this, s, "Tensor::mul"); }
Tensor Tensor::div(double s) const { return scalar_op(Binary::Div, *this, s, "Tensor::div"); }

Tensor Tensor::pow(double exponent) const {
  check_defined(*this, "Tensor::pow");
  Tensor out = empty(sizes_, dtype_, device(), suggest_memory_format(*this));
  kernels::backend_for(*this).pow_scalar(*this, exponent, out);
  return out;
}

Tensor Tensor::clamp(double lo, double hi) const {
  check_defined(*this, "Tensor::clamp");
  TENSOR_CHECK(lo <= hi, "Tensor::clamp: expected lo <= hi, got ", lo, " > ", hi);
  Tensor out = empty(sizes_, dtype_, device(), suggest_memory_format(*this));
  kernels::backend_for(*this).clamp(*this, lo, hi, out);
  return out;
}

Tensor Tensor::neg() const { return unary_op(Unary::Neg, *this, "Tensor::neg"); }
Tensor Tensor::abs() const { return unary_op(Unary::Abs, *this, "Tensor::abs"); }
Tensor Tensor::exp() const { return unary_op(Unary::Exp, *this, "Tensor::exp"); }
Tensor Tensor::log() const { return unary_op(Unary::Log, *this, "Tensor::log"); }
Tensor Tensor::sqrt() const { return unary_op(Unary::Sqrt, *this, "Tensor::sqrt"); }
Tensor Tensor::rsqrt() const { return unary_op(Unary::Rsqrt, *this, "Tensor::rsqrt"); }
Tensor Tensor::tanh() const { return unary_op(Unary::Tanh, *this, "Tensor::tanh"); }
Tensor Tensor::sigmoid() const { return unary_op(Unary::Sigmoid, *this, "Tensor::sigmoid"); }
Tensor Tensor::square() const { return unary_op(Unary::Square, *this, "Tensor::square"); }
Tensor Tensor::reciprocal() const { return unary_op(Unary::Reciprocal, *this, "Tensor::reciprocal"); }
Tensor Tensor::sign() const { return unary_op(Unary::Sign, *this, "Tensor::sign"); }
Tensor Tensor::relu() const { return unary_op(Unary::Relu, *this, "Tensor::relu"); }
Tensor Tensor::floor() const { return unary_op(Unary::Floor, *this, "Tensor::floor"); }
Tensor Tensor::ceil() const { return unary_op(Unary::Ceil, *this, "Tensor::ceil"); }
Tensor Tensor::round() const { return unary_op(Unary::Round, *this, "Tensor::round"); }

Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  return binary_into(Binary::Add, out, a, b, alpha, "add_out");
}
Tensor& Tensor::add_(const Tensor& o, double alpha) { return binary_inplace(Binary::Add, *this, o, alpha, "Tensor::add_"); }
Tensor& Tensor::sub_(const Tensor& o, double alpha) { return binary_inplace(Binary::Sub, *this, o, alpha, "Tensor::sub_"); }
Tensor& Tensor::mul_(const Tensor& o) { return binary_inplace(Binary::Mul, *this, o, 1, "Tensor::mul_"); }
Tensor& Tensor::div_(const Tensor& o) { return binary_inplace(Binary::Div, *this, o, 1, "Tensor::div_"); }

Tensor& Tensor::add_(double s) {
  check_defined(*this, "Tensor::add_");
  kernels::backend_for(*this).binary_scalar(Binary::Add, *this, s, false, *this);
  return *this;
}

Tensor& Tensor::mul_(double s) {
  check_defined(*this, "Tensor::mul_");
  kernels::backend_for(*this).binary_scalar(Binary::Mul, *this, s, false, *this);
  return *this;
}

Tensor& Tensor::clamp_(double lo, double hi) {
  check_defined(*this, "Tensor::clamp_");
  TENSOR_CHECK(lo <= hi, "Tensor::clamp_: expected lo <= hi, got ", lo, " > ", hi);
  kernels::backend_for(*this).clamp(*this, lo, hi, *this);
  return *this;
}

Tensor& Tensor::sqrt_() {
  check_defined(*this, "Tensor::sqrt_");
  kernels::backend_for(*this).unary(Unary::Sqrt, *this, *this);
  return *this;
}

Tensor& Tensor::neg_() {
  check_defined(*this, "Tensor::neg_");
  kernels::backend_for(*this).unary(Unary::Neg, *this, *this);
  return *this;
}

Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, double value) {
  check_ternary(*this, a, b, "Tensor::addcmul_");
  kernels::backend_for(*this).addcmul(*this, a.expand(sizes_), b.expand(sizes_), value);
  return *this;
}

Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, double value) {
  check_ternary(*this, a, b, "Tensor::addcdiv_");
  kernels::backend_for(*this).addcdiv(*this, a.expand(sizes_), b.expand(sizes_), value);
  return *this;
}

Tensor Tensor::eq(const Tensor& o) const { return binary_op(Binary::Eq, *this, o, 1, "Tensor::eq"); }
Tensor Tensor::ne(const Tensor& o) const { return binary_op(Binary::Ne, *this, o, 1, "Tensor::ne"); }
Tensor Tensor::lt(const Tensor& o) const { return binary_op(Binary::Lt, *this, o, 1, "Tensor::lt"); }
Tensor Tensor::le(const Tensor& o) const { return binary_op(Binary::Le, *this, o, 1, "Tensor::le"); }
Tensor Tensor::gt(const Tensor& o) const { return binary_op(Binary::Gt, *this, o, 1, "Tensor::gt"); }
Tensor Tensor::ge(const Tensor& o) const { return binary_op(Binary::Ge, *this, o, 1, "Tensor::ge"); }
Tensor Tensor::eq(double s) const { return scalar_op(Binary::Eq, *this, s, "Tensor::eq"); }
Tensor Tensor::ne(double s) const { return scalar_op(Binary::Ne, *this, s, "Tensor::ne"); }
Tensor Tensor::lt(double s) const { return scalar_op(Binary::Lt, *this, s, "Tensor::lt"); }
Tensor Tensor::le(double s) const { return scalar_op(Binary::Le, *this, s, "Tensor::le"); }
Tensor Tensor::gt(double s) const { return scalar_op(Binary::Gt, *this, s, "Tensor::gt"); }
Tensor Tensor::ge(double s) const { return scalar_op(Binary::Ge, *this, s, "Tensor::ge"); }

// ------------------------------------------------------------------------------ reductions

Tensor Tensor::sum() const {
  check_defined(*this, "Tensor::sum");
  const Tensor in = reducible(*this).contiguous();
  Tensor out = empty({}, in.dtype(), device());
  kernels::backend_for(in).reduce(Reduce::Sum, in, 1, numel_, 1, out, Tensor());
  return out;
}

Tensor Tensor::sum(int64_t dim, bool keepdim) const {
  check_defined(*this, "Tensor::sum");
  const int64_t d = wrap_dim(dim, this->dim(), "Tensor::sum");
  if (this->dim() == 0) return sum();
  const Tensor in = reducible(*this).contiguous();
  const ReduceShape r = reduce_shape(in, d, keepdim);
  Tensor out = empty(r.out_shape, in.dtype(), device());
  kernels::backend_for(in).reduce(Reduce::Sum, in, r.outer, r.n, r.inner, out, Tensor());
  return out;
}

Tensor Tensor::mean() const {
  TENSOR_CHECK(is_floating(dtype_), "Tensor::mean: expected a floating tensor, got ", description());
  TENSOR_CHECK(numel_ > 0, "Tensor::mean: empty tensor ", description());
  return sum().div(static_cast<double>(numel_));
}

Tensor Tensor::mean(int64_t dim, bool keepdim) const {
  TENSOR_CHECK(is_floating(dtype_), "Tensor::mean: expected a floating tensor, got ", description());
  const int64_t n = this->dim() == 0 ? 1 : size(dim);
  TENSOR_CHECK(n > 0, "Tensor::mean: empty dimension ", dim, " in ", description());
  return sum(dim, keepdim).div(static_cast<double>(n));
}

Tensor Tensor::max() const {
  TENSOR_CHECK(numel_ > 0, "Tensor::max: empty tensor ", description());
  return extremum(contiguous().reshape({-1}), 0, false, Reduce::Max, "Tensor::max").first.reshape({});
}

Tensor Tensor::min() const {
  TENSOR_CHECK(numel_ > 0, "Tensor::min: empty tensor ", description());
  return extremum(contiguous().reshape({-1}), 0, false, Reduce::Min, "Tensor::min").first.reshape({});
}

std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return extremum(*this, dim, keepdim, Reduce::Max, "Tensor::max");
}

std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return extremum(*this, dim, keepdim, Reduce::Min, "Tensor::min");
}

Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return max(dim, keepdim).second; }

double Tensor::norm() const {
  check_defined(*this, "Tensor::norm");
  const Tensor wide = dtype_ == DType::Float64 ? *this : to(DType::Float64);
  return std::sqrt(wide.square().sum().item());
}

Tensor Tensor::matmul(const Tensor& other) const {
  check_defined(*this, "Tensor::matmul");
  check_defined(other, "Tensor::matmul");
  TENSOR_CHECK(dim() == 2 && other.dim() == 2 && size(1) == other.size(0),
               "Tensor::matmul: expected [m x k] and [k x n], got ", shape_str(sizes_), " and ",
               shape_str(other.sizes()));
  check_same_dtype(*this, other, "Tensor::matmul");
  TENSOR_CHECK(is_cpu() && other.is_cpu(), "Tensor::matmul: CPU tensors only, got ",
               description(), " and ", other.description());
  const Tensor a = contiguous(), b = other.contiguous();
  Tensor out = empty({size(0), other.size(1)}, dtype_);
  dispatch_f32_f64(dtype_, "Tensor::matmul", [&](auto tag) {
    using T = decltype(tag);
    blas::gemm<T>(false, false, a.size(0), b.size(1), a.size(1), T(1), a.data<T>(), a.size(1),
                  b.data<T>(), b.size(1), T(0), out.data<T>(), b.size(1));
  });
  return out;
}

// ------------------------------------------------------------------------------ creation

Tensor empty(const Shape& shape, DType dtype, Device device) {
  const size_t nbytes = shape_nbytes(shape, dtype, "tensor::empty");
  return Tensor(std::make_shared<Storage>(nbytes, device), 0, shape, contiguous_strides(shape), dtype);
}

Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor empty(const Shape& shape, DType dtype, Device device, MemoryFormat format) {
  const size_t nbytes = shape_nbytes(shape, dtype, "tensor::empty");
  return Tensor(std::make_shared<Storage>(nbytes, device), 0, shape, contiguous_strides(shape, format), dtype);
}

Tensor empty_like(const Tensor& t) {
  check_defined(t, "tensor::empty_like");
  if (t.numel() > 0 && t.is_non_overlapping_and_dense()) {
    Shape strides = t.strides();
    const Shape row_major = contiguous_strides(t.sizes());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.size(d) == 1) strides[d] = row_major[d];  // a size-1 dim's stride is free: keep it sane
    }
    const size_t nbytes = shape_nbytes(t.sizes(), t.dtype(), "tensor::empty_like");
    return Tensor(std::make_shared<Storage>(nbytes, t.device()), 0, t.sizes(), strides, t.dtype());
  }
  return empty(t.sizes(), t.dtype(), t.device(), suggest_memory_format(t));
}

Tensor zeros_like(const Tensor& t) { return empty_like(t).fill_(0.0); }

Tensor arange(double end, DType dtype, Device device) { return arange(0, end, 1, dtype, device); }

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  TENSOR_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
               "tensor::arange: invalid range start=", start, " end=", end, " step=", step);
  const double count = std::ceil((end - start) / step);
  TENSOR_CHECK(count < 0x1p62, "tensor::arange: ", count, " elements (start=", start, " end=", end, " step=",
               step, ") are too many");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + step * static_cast<double>(i);
  return from_vector(values, {n}).to(device, dtype);
}

Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.uniform_(lo, hi, gen);
  return t;
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.normal_(mean, std, gen);
  return t;
}

Tensor scalar_tensor(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

template <class T>
Tensor from_vector(const std::vector<T>& values, Shape shape) {
  if (shape.empty() && !values.empty()) shape = {static_cast<int64_t>(values.size())};
  TENSOR_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()), "tensor::from_vector: ",
               values.size(), " values for shape ", shape_str(shape));
  Tensor t = empty(shape, dtype_v<T>);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor from_vector<float>(const std::vector<float>&, Shape);
template Tensor from_vector<double>(const std::vector<double>&, Shape);
template Tensor from_vector<Half>(const std::vector<Half>&, Shape);
template Tensor from_vector<BFloat16>(const std::vector<BFloat16>&, Shape);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, Shape);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, Shape);

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TENSOR_CHECK(!tensors.empty(), "tensor::cat: no tensors given");
  const Tensor& first = tensors.front();
  check_defined(first, "tensor::cat");
  const int64_t d = wrap_dim(dim, first.dim(), "tensor::cat");
  TENSOR_CHECK(first.dim() > 0, "tensor::cat: cannot concatenate 0-d tensors");
  Shape shape = first.sizes();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_defined(t, "tensor::cat");
    check_same_device(first, t, "tensor::cat");
    check_same_dtype(first, t, "tensor::cat");
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == first.size(k);
    TENSOR_CHECK(same, "tensor::cat: tensor ", i, " is ", shape_str(t.sizes()), ", expected ",
                 shape_str(first.sizes()), " except in dimension ", d);
    shape[d] += t.size(d);
  }
  Tensor out = empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    out.narrow(d, at, t.size(d)).copy_(t);
    at += t.size(d);
  }
  return out;
}

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& indices) {
  check_defined(t, "tensor::index_select");
  check_defined(indices, "tensor::index_select");
  TENSOR_CHECK(indices.dim() == 1, "tensor::index_select: expected 1-d indices, got ",
               indices.description());
  const int64_t d = wrap_dim(dim, t.dim(), "tensor::index_select");
  const std::vector<int64_t> idx = indices.to_vector<int64_t>();
  Shape shape = t.sizes();
  shape[d] = static_cast<int64_t>(idx.size());
  Tensor out = empty(shape, t.dtype(), t.device());
  for (size_t j = 0; j < idx.size(); ++j) {
    TENSOR_CHECK(idx[j] >= 0 && idx[j] < t.size(d), "tensor::index_select: index ", idx[j],
                 " out of range for dimension ", d, " of ", shape_str(t.sizes()));
    out.select(d, static_cast<int64_t>(j)).copy_(t.select(d, idx[j]));
  }
  return out;
}

// ------------------------------------------------------------------------------ test helpers

namespace {
std::pair<std::vector<double>, std::vector<double>> host_pair(const Tensor& a, const Tensor& b,
                                                              const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  TENSOR_CHECK(a.sizes() == b.sizes(), op, ": shapes differ: ", a.description(), " and ",
               b.description());
  return {a.to_vector<double>(), b.to_vector<double>()};
}
}  // namespace

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto [x, y] = host_pair(a, b, "tensor::max_abs_diff");
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    if (std::isnan(d)) return d;
    worst = std::max(worst, d);
  }
  return worst;
}

double max_rel_error(const Tensor& a, const Tensor& b) {
  auto [x, y] = host_pair(a, b, "tensor::max_rel_error");
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]) / std::max({std::abs(x[i]), std::abs(y[i]), 1.0});
    if (std::isnan(d)) return d;
    worst = std::max(worst, d);
  }
  return worst;
}

double rel_norm_error(const Tensor& a, const Tensor& b) {
  auto [x, y] = host_pair(a, b, "tensor::rel_norm_error");
  double diff = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    ref += y[i] * y[i];
  }
  if (ref == 0) return std::sqrt(diff);
  return std::sqrt(diff / ref);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  auto [x, y] = host_pair(a, b, "tensor::allclose");
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]))) return false;
  }
  return true;
}

bool has_nonfinite(const Tensor& t) {
  for (double v : t.to_vector<double>()) {
    if (!std::isfinite(v)) return true;
  }
  return false;
}

}  // namespace tensor
