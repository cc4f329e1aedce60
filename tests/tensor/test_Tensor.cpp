// test_Tensor.cpp: Tensor metadata, views, copies, creation, randomness, errors, printing.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "tensor/Tensor.h"

using namespace tensor;

namespace {
Tensor iota(const Shape& shape, DType dtype = DType::Float32) {
  return arange(static_cast<double>(shape_numel(shape)), dtype).view(shape);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("metadata and contiguous strides") {
  Tensor t = empty({2, 3, 4});
  CHECK(t.defined());
  CHECK(t.dim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.strides() == Shape{12, 4, 1});
  CHECK(t.size(-1) == 4);
  CHECK(t.is_contiguous());
  CHECK(t.nbytes() == 96);
  CHECK(t.description() == "float32 [2 x 3 x 4] on cpu");
  CHECK_FALSE(Tensor().defined());
  CHECK(empty({}, DType::Float64).numel() == 1);
  CHECK(empty({0, 5}).numel() == 0);
}

TEST_CASE("views share storage and index correctly") {
  Tensor t = iota({2, 3, 4});
  SUBCASE("view and reshape") {
    Tensor v = t.view({6, -1});
    CHECK(v.sizes() == Shape{6, 4});
    CHECK(v.shares_storage(t));
    CHECK(v.get({5, 3}) == 23);
    Tensor tr = t.transpose(0, 2);  // [4 x 3 x 2], not contiguous
    CHECK_FALSE(tr.is_contiguous());
    CHECK_THROWS_AS(tr.view({24}), Error);
    Tensor r = tr.reshape({24});
    CHECK_FALSE(r.shares_storage(t));
    CHECK(r.get({1}) == 12);  // tr[0][0][1] = t[1][0][0]
    // A view that merges only compatible dims keeps sharing
    Tensor n = t.narrow(2, 0, 2);  // [2 x 3 x 2] strides [12, 4, 1]
    Tensor nv = t.transpose(1, 2).transpose(1, 2).view({6, 4});
    CHECK(nv.shares_storage(t));
    CHECK_THROWS_AS(n.view({12}), Error);
  }
  SUBCASE("narrow select transpose permute") {
    Tensor n = t.narrow(1, 1, 2);
    CHECK(n.sizes() == Shape{2, 2, 4});
    CHECK(n.get({1, 0, 2}) == 18);
    Tensor s = t.select(0, 1).select(1, 3);
    CHECK(s.sizes() == Shape{3});
    CHECK(s.get({2}) == 23);
    CHECK(t[1].get({0, 0}) == 12);
    Tensor p = t.permute({2, 0, 1});
    CHECK(p.sizes() == Shape{4, 2, 3});
    CHECK(p.get({3, 1, 2}) == t.get({1, 2, 3}));
    n.fill_(-1);
    CHECK(t.get({0, 1, 0}) == -1);
    CHECK(t.get({0, 0, 0}) == 0);
  }
  SUBCASE("unsqueeze squeeze expand") {
    Tensor u = t.unsqueeze(1);
    CHECK(u.sizes() == Shape{2, 1, 3, 4});
    CHECK(u.squeeze(1).sizes() == t.sizes());
    CHECK(u.unsqueeze(-1).squeeze().sizes() == t.sizes());
    Tensor row = iota({1, 4});
    Tensor e = row.expand({3, 4});
    CHECK(e.strides() == Shape{0, 1});
    CHECK(e.get({2, 3}) == 3);
    CHECK(e.contiguous().sum().item() == 18);
    CHECK_THROWS_AS(iota({2, 4}).expand({3, 4}), Error);
  }
  SUBCASE("index errors name the operation and shape") {
    CHECK(error_of([&] {
            (void)t.select(0, 2);
          }).find("Tensor::select: index 2 out of range for dimension 0 of [2 x 3 x 4]") == 0);
    CHECK(error_of([&] { (void)t.narrow(2, 3, 2); }).find("[2 x 3 x 4]") != std::string::npos);
    CHECK(error_of([&] { (void)t.size(3); }).find("dimension 3 out of range") != std::string::npos);
    CHECK(error_of([&] { (void)t.view({5, -1}); }).find("cannot view [2 x 3 x 4]") != std::string::npos);
    CHECK_THROWS_AS(t.permute({0, 0, 1}), Error);
    CHECK_THROWS_AS(t.get({0, 0}), Error);
  }
}

TEST_CASE("copies across dtypes, broadcasting into strided targets") {
  Tensor src = iota({3, 4}, DType::Float64).mul(0.5);
  Tensor f16 = src.to(DType::Float16);
  CHECK(f16.dtype() == DType::Float16);
  CHECK(max_abs_diff(f16, src.to(DType::Float16)) == 0);
  CHECK(max_abs_diff(f16.to(DType::Float64), src) == 0);  // halves of small ints are exact
  Tensor i64 = src.to(DType::Int64);
  CHECK(i64.get({2, 3}) == 5);                    // 5.5 truncates toward zero
  Tensor target = zeros({4, 3}).transpose(0, 1);  // strided destination
  target.copy_(src.to(DType::Float32));
  CHECK(target.get({2, 1}) == 4.5);
  Tensor row = from_vector<float>({1, 2, 3, 4});
  Tensor dst = zeros({3, 4});
  dst.copy_(row);
  CHECK(dst.sum().item() == 30);
  CHECK_THROWS_AS(dst.copy_(zeros({5})), Error);
  CHECK(src.to(DType::Float64).is_same_view(src));  // no-op conversions return the same view
  CHECK(src.to(Device::cpu()).is_same_view(src));
  Tensor c = src.clone();
  CHECK_FALSE(c.shares_storage(src));
  CHECK(max_abs_diff(c, src) == 0);
}

// Note [Copies between overlapping views] in tensor/Tensor.cpp
TEST_CASE("copy_ between overlapping views reads the source as it was before the copy") {
  for (const DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
    INFO(name(dt));
    const std::vector<double> want_down = {1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10};
    Tensor t = arange(11.0, dt);
    t.narrow(0, 0, 8).copy_(t.narrow(0, 1, 8));  // a copy that walks forward would still work
    CHECK(t.to(DType::Float64).to_vector<double>() == want_down);
    Tensor u = arange(11.0, dt);
    u.narrow(0, 1, 8).copy_(u.narrow(0, 0, 8));  // one that walks forward would smear u[0]
    CHECK(u.to(DType::Float64).to_vector<double>() == std::vector<double>{0, 0, 1, 2, 3, 4, 5, 6, 7, 9, 10});
    // a transposed view of its own storage: the transpose as it was
    Tensor m = arange(9.0, dt).view({3, 3});
    m.copy_(m.transpose(0, 1));
    CHECK(m.to(DType::Float64).to_vector<double>() == std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8});
    // the same view, and views that share the storage without overlapping, copy as before
    Tensor w = arange(10.0, dt);
    w.copy_(w);
    w.narrow(0, 0, 5).copy_(w.narrow(0, 5, 5));
    CHECK(w.to(DType::Float64).to_vector<double>() == std::vector<double>{5, 6, 7, 8, 9, 5, 6, 7, 8, 9});
  }
}

TEST_CASE("resize_ keeps storage when it is large enough") {
  Tensor t = empty({4, 8});
  const void* before = t.raw_data();
  t.resize_({2, 8});
  CHECK(t.raw_data() == before);
  CHECK(t.is_contiguous());
  t.resize_({32});
  CHECK(t.raw_data() == before);
  t.resize_({64});
  CHECK(t.numel() == 64);
  CHECK(t.storage()->nbytes() >= 256);
}

TEST_CASE("creation") {
  CHECK(full({2, 2}, 3.5, DType::Float64).sum().item() == 14);
  CHECK(ones({3}, DType::Int64).sum().item() == 3);
  Tensor a = arange(1, 2, 0.25, DType::Float64);
  CHECK(a.sizes() == Shape{4});
  CHECK(a.get({3}) == 1.75);
  CHECK(arange(5).sizes() == Shape{5});
  CHECK(arange(3, 0, -1).to_vector<float>() == std::vector<float>{3, 2, 1});
  CHECK_THROWS_AS(arange(0, 1, 0), Error);
  CHECK(scalar_tensor(2.5).item() == 2.5);
  CHECK_THROWS_AS(from_vector<float>({1, 2, 3}, {2, 2}), Error);
  Tensor c = cat({iota({2, 3}), iota({1, 3}).add(100)}, 0);
  CHECK(c.sizes() == Shape{3, 3});
  CHECK(c.get({2, 2}) == 102);
  Tensor c1 = cat({iota({2, 1}), iota({2, 2})}, 1);
  CHECK(c1.get({1, 2}) == 3);
  CHECK_THROWS_AS(cat({iota({2, 3}), iota({2, 2})}, 0), Error);
  Tensor sel = index_select(iota({4, 2}), 0, from_vector<int64_t>({3, 0, 3}));
  CHECK(sel.to_vector<float>() == std::vector<float>{6, 7, 0, 1, 6, 7});
  CHECK_THROWS_AS(index_select(iota({4, 2}), 0, from_vector<int64_t>({4})), Error);
}

TEST_CASE("randomness is seeded, reproducible and well distributed") {
  Generator g1(42), g2(42), g3(43);
  Tensor a = uniform({1000}, -1, 1, g1);
  Tensor b = uniform({1000}, -1, 1, g2);
  Tensor c = uniform({1000}, -1, 1, g3);
  CHECK(max_abs_diff(a, b) == 0);
  CHECK(max_abs_diff(a, c) > 0.1);
  CHECK(a.min().item() >= -1);
  CHECK(a.max().item() < 1);
  CHECK(std::abs(a.mean().item()) < 0.1);
  // consecutive draws differ, and a reseed repeats them
  Tensor d = uniform({1000}, -1, 1, g1);
  CHECK(max_abs_diff(a, d) > 0.1);
  g1.manual_seed(42);
  CHECK(max_abs_diff(uniform({1000}, -1, 1, g1), a) == 0);

  Generator gn(7);
  Tensor n = normal({20000}, 2.0, 3.0, gn, DType::Float64);
  const double mean = n.mean().item();
  const double var = n.sub(mean).square().mean().item();
  CHECK(mean == doctest::Approx(2.0).epsilon(0.05));
  CHECK(std::sqrt(var) == doctest::Approx(3.0).epsilon(0.03));
  Generator gb(9);
  Tensor m = empty({20000}).bernoulli_(0.3, gb);
  CHECK(m.mean().item() == doctest::Approx(0.3).epsilon(0.05));
  CHECK(m.eq(0).add(m.eq(1)).to(DType::Int64).sum().item() == 20000);

  // Filling a strided view fills exactly the viewed elements
  Generator gs(5);
  Tensor base = zeros({4, 4});
  base.transpose(0, 1).narrow(0, 1, 2).uniform_(1, 2, gs);
  CHECK(base.gt(0).to(DType::Int64).sum().item() == 8);
  Generator g(1);
  CHECK(g.randint(10) < 10);
  CHECK_THROWS_AS(g.randint(0), Error);
}

TEST_CASE("devices parse and print; CUDA misuse is reported") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
  CHECK(Device::parse("cuda").str() == "cuda:0");
  CHECK_THROWS_AS(Device::parse("gpu"), Error);
  CHECK_THROWS_AS(Device::parse("cuda:x"), Error);
  CHECK_THROWS_AS(Device::parse("cuda:-1"), Error);
}

TEST_CASE("printing follows Torch") {
  Tensor t = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.str() == " 1  2  3\n 4  5  6\n[tensor.DoubleTensor of size 2x3]\n");
  Tensor f = from_vector<float>({0.5f, -1.25f});
  CHECK(f.str() == "  0.5000\n -1.2500\n[tensor.FloatTensor of size 2]\n");
  Tensor three = arange(8, DType::Int64).view({2, 2, 2});
  CHECK(three.str().find("(1,.,.) = \n 0  1\n 2  3\n") == 0);
  CHECK(three.str().find("(2,.,.) = ") != std::string::npos);
  CHECK(three.str().find("[tensor.LongTensor of size 2x2x2]") != std::string::npos);
}
