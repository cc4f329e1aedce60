// test_MemoryFormat.cpp: memory formats (Note [Memory formats] in Tensor.h): channels-last
// strides, is_contiguous(format), contiguous(format), empty/empty_like/zeros_like layouts,
// suggest_memory_format, empty tensors, and element-wise operators on channels-last operands
// (values as on row-major ones, layouts kept where the output is made like an input).
#include <doctest/doctest.h>

#include "tensor/Tensor.h"

using namespace tensor;

namespace {
Tensor iota(const Shape& shape, DType dtype = DType::Float32) {
  return arange(static_cast<double>(shape_numel(shape)), dtype).view(shape);
}

// NHWC storage viewed as NCHW, built by hand (independent of contiguous(ChannelsLast)).
Tensor nhwc_of(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }
}  // namespace

TEST_CASE("channels-last strides of 4-d and 5-d shapes") {
  CHECK(contiguous_strides({2, 3, 4, 5}, MemoryFormat::ChannelsLast) == Shape{60, 1, 15, 3});
  CHECK(contiguous_strides({2, 3, 4, 5, 6}, MemoryFormat::ChannelsLast) == Shape{360, 1, 90, 18, 3});
  CHECK(contiguous_strides({2, 3, 4, 5}) == Shape{60, 20, 5, 1});
  // other ranks have no channels-last form
  CHECK(contiguous_strides({3, 4, 5}, MemoryFormat::ChannelsLast) == Shape{20, 5, 1});
  const Tensor t = empty({2, 3, 4, 5}, DType::Float32, Device::cpu(), MemoryFormat::ChannelsLast);
  CHECK(t.sizes() == Shape{2, 3, 4, 5});
  CHECK(t.strides() == Shape{60, 1, 15, 3});
  CHECK(t.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.is_non_overlapping_and_dense());
}

TEST_CASE("contiguous(format) copies only when needed and keeps the values") {
  const Tensor x = iota({2, 3, 4, 5});
  const Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK_FALSE(cl.shares_storage(x));
  CHECK(cl.strides() == nhwc_of(x).strides());
  CHECK(max_abs_diff(cl, x) == 0);
  CHECK(cl.contiguous(MemoryFormat::ChannelsLast).is_same_view(cl));
  const Tensor back = cl.contiguous();
  CHECK(back.is_contiguous());
  CHECK(max_abs_diff(back, x) == 0);
  CHECK(x.contiguous(MemoryFormat::Contiguous).is_same_view(x));
  // 5-d
  const Tensor v = iota({2, 3, 2, 3, 4});
  const Tensor vcl = v.contiguous(MemoryFormat::ChannelsLast);
  CHECK(vcl.strides() == Shape{72, 1, 36, 12, 3});
  CHECK(max_abs_diff(vcl, v) == 0);
  // a transposed (non-dense-in-either-format) view
  const Tensor tr = x.transpose(2, 3);
  CHECK_FALSE(tr.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(tr.contiguous(MemoryFormat::ChannelsLast), tr) == 0);
}

TEST_CASE("size-1 dims and ambiguous layouts") {
  // C == 1: channels-last and row-major are the same strides (size-1 dims do not count)
  const Tensor one_channel = iota({2, 1, 3, 3});
  CHECK(one_channel.is_contiguous());
  CHECK(one_channel.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(suggest_memory_format(one_channel) == MemoryFormat::Contiguous);
  // H == W == 1
  const Tensor pooled = empty({4, 8, 1, 1}, DType::Float32, Device::cpu(), MemoryFormat::ChannelsLast);
  CHECK(pooled.is_contiguous());
  CHECK(pooled.is_contiguous(MemoryFormat::ChannelsLast));
}

TEST_CASE("every tensor without elements is contiguous in every format") {
  for (const Shape& s : {Shape{0, 3, 4, 5}, Shape{2, 0, 4, 5}, Shape{2, 3, 0, 5}, Shape{2, 0, 3}, Shape{0}}) {
    const Tensor e = empty(s);
    CHECK(e.numel() == 0);
    CHECK(e.is_contiguous());
    CHECK(e.contiguous().is_contiguous());
    CHECK(e.is_contiguous(MemoryFormat::ChannelsLast));
    CHECK(e.is_non_overlapping_and_dense());
  }
  // a size-0 narrow of a larger tensor, and its transpose
  const Tensor n = iota({3, 4}).narrow(0, 1, 0);
  CHECK(n.is_contiguous());
  CHECK(n.t().is_contiguous());
  CHECK(n.t().contiguous().is_contiguous());
  Tensor r = empty({2, 3});
  r.resize_({2, 0, 3});
  CHECK(r.is_contiguous());
}

TEST_CASE("suggest_memory_format") {
  const Tensor x = iota({2, 3, 4, 5});
  CHECK(suggest_memory_format(x) == MemoryFormat::Contiguous);
  CHECK(suggest_memory_format(nhwc_of(x)) == MemoryFormat::ChannelsLast);
  CHECK(suggest_memory_format(x.contiguous(MemoryFormat::ChannelsLast)) == MemoryFormat::ChannelsLast);
  CHECK(suggest_memory_format(x.transpose(2, 3)) == MemoryFormat::Contiguous);
  CHECK(suggest_memory_format(iota({3, 4, 5})) == MemoryFormat::Contiguous);
  CHECK(suggest_memory_format(iota({2, 3, 2, 3, 4}).contiguous(MemoryFormat::ChannelsLast)) ==
        MemoryFormat::ChannelsLast);
  CHECK(suggest_memory_format(Tensor()) == MemoryFormat::Contiguous);
}

TEST_CASE("empty_like and zeros_like keep a dense input's layout") {
  const Tensor cl = iota({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor e = empty_like(cl);
  CHECK(e.strides() == cl.strides());
  const Tensor z = zeros_like(cl);
  CHECK(z.strides() == cl.strides());
  CHECK(z.sum().item() == 0);
  // a dense permuted view keeps its strides; a strided (sliced) view becomes row-major
  const Tensor tr = iota({3, 4}).t();
  CHECK(empty_like(tr).strides() == tr.strides());
  const Tensor sliced = iota({4, 6}).narrow(1, 0, 3);
  CHECK(empty_like(sliced).is_contiguous());
  CHECK(zeros_like(iota({2, 3})).is_contiguous());
}

TEST_CASE("same_dense_layout: pairs of dense tensors whose elements line up as flat blocks") {
  const Tensor a = iota({2, 3, 4, 5});
  const Tensor cl = a.contiguous(MemoryFormat::ChannelsLast);
  CHECK(same_dense_layout(a, a.clone()));
  CHECK(same_dense_layout(cl, empty_like(cl)));
  CHECK_FALSE(same_dense_layout(a, cl));                                 // both dense, laid out otherwise
  CHECK_FALSE(same_dense_layout(a, iota({2, 3, 5, 4})));                 // another shape
  CHECK_FALSE(same_dense_layout(a.narrow(3, 0, 4), a.narrow(3, 1, 4)));  // not dense
  // a size-1 dim's stride does not matter
  const Tensor one = iota({2, 1, 4, 5});
  CHECK(same_dense_layout(one, one.contiguous(MemoryFormat::ChannelsLast)));
  CHECK(same_dense_layout(empty({0, 3}, DType::Float32, Device::cpu()), empty({0, 3}, DType::Float32, Device::cpu())));
}

TEST_CASE("flat_view: a dense tensor's elements in memory order, a strided one refused") {
  const Tensor a = iota({2, 3, 4, 5});
  const Tensor cl = a.contiguous(MemoryFormat::ChannelsLast);
  CHECK(flat_view(a).sizes() == Shape{120});
  CHECK(flat_view(a).raw_data() == a.raw_data());
  CHECK(flat_view(cl).sizes() == Shape{120});
  CHECK(flat_view(cl).raw_data() == cl.raw_data());
  // memory order: channels-last puts the channels innermost
  CHECK(flat_view(cl).to_vector<float>() == a.permute({0, 2, 3, 1}).contiguous().view({-1}).to_vector<float>());
  flat_view(cl).narrow(0, 0, 1).fill_(-1);  // a view: writes reach the tensor
  CHECK(cl.get({0, 0, 0, 0}) == -1);
  CHECK_THROWS_WITH_AS(flat_view(a.narrow(3, 0, 2)), doctest::Contains("flat_view: expected a dense tensor"), Error);
}

TEST_CASE("resize_ with a memory format") {
  Tensor t = empty({2, 3, 4, 5});
  const void* before = t.raw_data();
  t.resize_({2, 3, 4, 5}, MemoryFormat::ChannelsLast);
  CHECK(t.raw_data() == before);
  CHECK(t.is_contiguous(MemoryFormat::ChannelsLast));
  t.resize_({1, 3, 2, 2}, MemoryFormat::Contiguous);
  CHECK(t.is_contiguous());
}

TEST_CASE("element-wise operators on channels-last operands") {
  Generator gen(7);
  const Tensor a = uniform({2, 3, 4, 5}, -2, 2, gen);
  const Tensor b = uniform({2, 3, 4, 5}, -2, 2, gen);
  const Tensor acl = a.contiguous(MemoryFormat::ChannelsLast), bcl = b.contiguous(MemoryFormat::ChannelsLast);
  CHECK(max_abs_diff(acl + bcl, a + b) == 0);
  CHECK(max_abs_diff(acl * bcl, a * b) == 0);
  CHECK(max_abs_diff(acl.tanh(), a.tanh()) == 0);
  CHECK(max_abs_diff(acl.add(b), a + b) == 0);  // mixed layouts
  // in place keeps the layout and the values
  Tensor s = acl.clone().contiguous(MemoryFormat::ChannelsLast);
  s.add_(bcl, 0.5);
  CHECK(s.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(s, a.add(b, 0.5)) == 0);
  s.mul_(b);  // a row-major operand into a channels-last one
  CHECK(max_abs_diff(s, a.add(b, 0.5).mul(b)) == 0);
  s.fill_(3);
  CHECK(s.sum().item() == 3 * 120);
  // copy_ between formats and dtypes
  Tensor d = empty({2, 3, 4, 5}, DType::Float64, Device::cpu(), MemoryFormat::ChannelsLast);
  d.copy_(a);
  CHECK(max_abs_diff(d, a) == 0);
  Tensor h = empty({2, 3, 4, 5}, DType::Float16, Device::cpu(), MemoryFormat::ChannelsLast);
  h.copy_(acl);
  CHECK(max_abs_diff(h, a.to(DType::Float16)) == 0);
  // broadcasting a per-channel tensor over a channels-last one
  const Tensor bias = iota({1, 3, 1, 1});
  CHECK(max_abs_diff(acl + bias, a + bias) == 0);
  // to(dtype) keeps channels-last
  CHECK(acl.to(DType::Float64).is_contiguous(MemoryFormat::ChannelsLast));
}
