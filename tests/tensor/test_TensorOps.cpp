// test_TensorOps.cpp: element-wise arithmetic, comparisons, reductions and matmul against
// values computed independently in plain loops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "tensor/Blas.h"
#include "tensor/Tensor.h"

using namespace tensor;

TEST_CASE("binary ops broadcast like NumPy") {
  Generator g(11);
  Tensor a = uniform({3, 1, 4}, -2, 2, g, DType::Float64);
  Tensor b = uniform({5, 1}, 0.5, 2, g, DType::Float64);
  Tensor sum = a.add(b, 0.5);
  REQUIRE(sum.sizes() == Shape{3, 5, 4});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        const double x = a.get({i, 0, k}), y = b.get({j, 0});
        CHECK(sum.get({i, j, k}) == doctest::Approx(x + 0.5 * y));
        CHECK(a.sub(b).get({i, j, k}) == doctest::Approx(x - y));
        CHECK(a.mul(b).get({i, j, k}) == doctest::Approx(x * y));
        CHECK(a.div(b).get({i, j, k}) == doctest::Approx(x / y));
        CHECK(a.maximum(b).get({i, j, k}) == std::max(x, y));
        CHECK(a.minimum(b).get({i, j, k}) == std::min(x, y));
        CHECK(a.lt(b).get({i, j, k}) == (x < y ? 1 : 0));
      }
  CHECK(a.lt(b).dtype() == DType::UInt8);
  CHECK_THROWS_WITH_AS(a.add(uniform({2, 1, 4}, 0, 1, g, DType::Float64)),
                       "Tensor::add: shapes [3 x 1 x 4] and [2 x 1 x 4] cannot broadcast", Error);
  CHECK_THROWS_WITH_AS(
      a.add(b.to(DType::Float32)),
      doctest::Contains("operands of different dtypes: float64 [3 x 1 x 4] on cpu and float32 [5 x 1] on cpu"), Error);
}

TEST_CASE("in-place ops, scalars and non-contiguous operands") {
  Tensor t = arange(12, DType::Float32).view({3, 4});
  Tensor tt = t.t();  // [4 x 3] strided
  Tensor col = from_vector<float>({1, 2, 3});
  tt.add_(col);  // broadcast a row over the strided view
  CHECK(t.get({2, 3}) == 11 + 3);
  CHECK(t.get({0, 1}) == 1 + 1);
  t.mul_(2).add_(-1);
  CHECK(t.get({0, 0}) == 1);
  t.div_(full({3, 4}, 2.0));
  CHECK(t.get({0, 0}) == 0.5);
  CHECK_THROWS_AS(col.add_(t), Error);  // result shape would not fit the in-place operand
  Tensor acc = zeros({3});
  acc.addcmul_(from_vector<float>({1, 2, 3}), from_vector<float>({4, 5, 6}), 0.5);
  CHECK(acc.to_vector<float>() == std::vector<float>{2, 5, 9});
  acc.addcdiv_(from_vector<float>({1, 1, 1}), from_vector<float>({2, 4, 8}), 2);
  CHECK(acc.to_vector<float>() == std::vector<float>{3, 5.5f, 9.25f});
  CHECK(from_vector<float>({-3, 0.5f, 7}).clamp(-1, 1).to_vector<float>() == std::vector<float>{-1, 0.5f, 1});
  CHECK(from_vector<float>({2, 3}).pow(3).to_vector<float>() == std::vector<float>{8, 27});
  CHECK(from_vector<float>({4, 9}).pow(0.5).to_vector<float>() == std::vector<float>{2, 3});
}

TEST_CASE("add_out writes a + alpha b into an existing tensor, aliasing allowed, shapes checked") {
  const Tensor a = arange(12, DType::Float64).view({3, 4});
  const Tensor row = from_vector<double>({1, 2, 3, NAN});
  Tensor out = full({3, 4}, -7.0, DType::Float64);
  add_out(out, a, row, 2);  // row broadcast over the rows
  CHECK(out.get({2, 1}) == 9 + 4);
  CHECK(std::isnan(out.get({1, 3})));
  Tensor strided = zeros({4, 3}, DType::Float64).t();  // a [3 x 4] result with transposed strides
  add_out(strided, a, a);
  CHECK(max_abs_diff(strided, a.mul(2)) == 0);
  Tensor self = a.clone();
  const Tensor finite_row = from_vector<double>({1, 2, 3, 4});
  add_out(self, self, finite_row);  // out is a itself: an in-place add
  CHECK(max_abs_diff(self, a.add(finite_row)) == 0);
  Tensor small = zeros({4}, DType::Float64);
  CHECK_THROWS_WITH_AS(add_out(small, a, row), doctest::Contains("into the result [4]"), Error);
  Tensor f32 = zeros({3, 4});
  CHECK_THROWS_AS(add_out(f32, a, a), Error);  // dtypes differ
}

TEST_CASE("unary ops match the C library") {
  const std::vector<double> xs = {-2.5, -1, -0.25, 0, 0.25, 1, 2.5};
  Tensor x = from_vector<double>(xs);
  auto check = [&](const Tensor& got, double (*f)(double)) {
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = f(xs[i]);
      if (std::isnan(want))
        CHECK(std::isnan(got.get({static_cast<int64_t>(i)})));
      else if (std::isinf(want))
        CHECK(got.get({static_cast<int64_t>(i)}) == want);
      else
        CHECK(got.get({static_cast<int64_t>(i)}) == doctest::Approx(want));
    }
  };
  check(x.neg(), [](double v) { return -v; });
  check(x.abs(), [](double v) { return std::abs(v); });
  check(x.exp(), [](double v) { return std::exp(v); });
  check(x.abs().log(), [](double v) { return std::log(std::abs(v)); });
  check(x.abs().sqrt(), [](double v) { return std::sqrt(std::abs(v)); });
  check(x.tanh(), [](double v) { return std::tanh(v); });
  check(x.sigmoid(), [](double v) { return 1 / (1 + std::exp(-v)); });
  check(x.square(), [](double v) { return v * v; });
  check(x.sign(), [](double v) { return static_cast<double>((v > 0) - (v < 0)); });
  check(x.relu(), [](double v) { return v > 0 ? v : 0.0; });
  check(x.floor(), [](double v) { return std::floor(v); });
  check(x.ceil(), [](double v) { return std::ceil(v); });
  check(x.round(), [](double v) { return std::nearbyint(v); });  // half to even: 2.5 -> 2
  check(x.add(3).reciprocal(), [](double v) { return 1 / (v + 3); });
  check(x.add(3).rsqrt(), [](double v) { return 1 / std::sqrt(v + 3); });
  CHECK(std::isnan(from_vector<double>({NAN}).relu().item()));
}

TEST_CASE("integer tensors: exact small values, no undefined behaviour") {
  Tensor a = from_vector<int64_t>({7, -7, 3});
  Tensor b = from_vector<int64_t>({2, 2, 0});
  CHECK(a.div(b).to_vector<int64_t>() == std::vector<int64_t>{3, -3, 0});  // /0 gives 0
  CHECK(a.mul(b).to_vector<int64_t>() == std::vector<int64_t>{14, -14, 0});
  CHECK(a.sum().item() == 3);
  CHECK(a.sum().dtype() == DType::Int64);
  Tensor u = full({300}, 200, DType::UInt8);
  CHECK(u.sum().item() == 60000);  // UInt8 sums are taken in Int64
  CHECK(from_vector<double>({1e300, -1e300, NAN}).to(DType::Int64).to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::lowest(), 0});
}

TEST_CASE("reductions over all and over each dimension") {
  Generator g(3);
  Tensor t = uniform({3, 4, 5}, -1, 1, g, DType::Float64);
  for (int64_t d = 0; d < 3; ++d) {
    Tensor s = t.sum(d);
    Tensor m = t.mean(d, true);
    auto [mx, idx] = t.max(d);
    CHECK(m.dim() == 3);
    CHECK(m.size(d) == 1);
    Shape out = t.sizes();
    out.erase(out.begin() + d);
    REQUIRE(s.sizes() == out);
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j) {
        double acc = 0, best = -INFINITY;
        int64_t best_k = -1;
        for (int64_t k = 0; k < t.size(d); ++k) {
          Shape at = {i, j};
          at.insert(at.begin() + d, k);
          const double v = t.get(at);
          acc += v;
          if (v > best) {
            best = v;
            best_k = k;
          }
        }
        CHECK(s.get({i, j}) == doctest::Approx(acc));
        CHECK(mx.get({i, j}) == best);
        CHECK(idx.get({i, j}) == best_k);
      }
  }
  CHECK(t.sum().item() == doctest::Approx(t.sum(0).sum(0).sum(0).item()));
  CHECK(t.norm() == doctest::Approx(std::sqrt(t.square().sum().item())));
  Tensor ties = from_vector<float>({1, 3, 3, -5, -5});
  CHECK(ties.argmax(0).item() == 1);  // first of equal maxima
  CHECK(ties.min(0).second.item() == 3);
  CHECK(ties.max().item() == 3);
  CHECK(std::isnan(from_vector<float>({1, NAN, 3}).max().item()));
  CHECK_THROWS_AS(empty({0}).max(), Error);
  // Sum of many float32 values stays accurate (accumulated in double)
  Tensor big = full({1 << 22}, 0.1, DType::Float32);
  CHECK(big.sum().item() == doctest::Approx(419430.4).epsilon(1e-6));
  CHECK(big.sum().dtype() == DType::Float32);
}

TEST_CASE("matmul matches a naive triple loop") {
  Generator g(5);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor a = uniform({7, 5}, -1, 1, g, dt);
    Tensor b = uniform({5, 3}, -1, 1, g, dt);
    Tensor c = a.matmul(b);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 5; ++k) acc += a.get({i, k}) * b.get({k, j});
        CHECK(c.get({i, j}) == doctest::Approx(acc).epsilon(1e-5));
      }
    Tensor ct = b.t().contiguous().t();  // transposed storage gives the same product
    CHECK(max_abs_diff(a.matmul(ct), c) < 1e-6);
  }
  CHECK_THROWS_AS(empty({2, 3}).matmul(empty({2, 3})), Error);
  CHECK_THROWS_AS(empty({2, 3}, DType::Int64).matmul(empty({3, 2}, DType::Int64)), Error);
}

TEST_CASE("comparison helpers") {
  Tensor a = from_vector<double>({1, 2, 100});
  Tensor b = from_vector<double>({1, 2.5, 101});
  CHECK(max_abs_diff(a, b) == 1);
  CHECK(max_rel_error(a, b) == doctest::Approx(0.5 / 2.5));  // scaled by max(|a|, |b|, 1)
  CHECK(allclose(a, a));
  CHECK_FALSE(allclose(a, b));
  CHECK(allclose(a, b, 0.25, 0));
  CHECK(rel_norm_error(a, a) == 0);
  CHECK(has_nonfinite(from_vector<float>({1, INFINITY})));
  CHECK_FALSE(has_nonfinite(a));
  CHECK_THROWS_AS(max_abs_diff(a, empty({2})), Error);
}

TEST_CASE(
    "blas::gemm against a plain triple loop: every transpose, alpha and beta, padded leading dims, and "
    "products large enough for Eigen's threads, one-row and one-column products (gemv)") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Size {
    int64_t M, N, K;
  };
  for (const Size& z :
       {Size{300, 70, 200}, Size{40, 500, 150}, Size{5, 3, 4}, Size{1, 700, 300}, Size{600, 1, 250}, Size{1, 1, 40}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool tA = trans & 1, tB = trans & 2;
      const auto [M, N, K] = z;
      INFO("M ", M, " N ", N, " K ", K, " transA ", tA, " transB ", tB);
      const int64_t lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 2, ldc = N + 1;
      std::vector<double> A((tA ? K : M) * lda), B((tB ? N : K) * ldb), C(M * ldc);
      for (auto& v : A) v = u(rng);
      for (auto& v : B) v = u(rng);
      for (auto& v : C) v = u(rng);
      std::vector<double> want = C;
      const double alpha = 0.75, beta = -0.5;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += (tA ? A[k * lda + i] : A[i * lda + k]) * (tB ? B[j * ldb + k] : B[k * ldb + j]);
          want[i * ldc + j] = alpha * s + beta * C[i * ldc + j];
        }
      // 0 panels: gemm itself; else the panels products outside a parallel region run (Note [Which
      // side of C to cut]), cut each way, including more panels than rows or columns
      using blas::detail::PanelCut;
      for (int panels : {0, 1, 2, 3, 7, 1000})
        for (PanelCut cut : {PanelCut::None, PanelCut::Rows, PanelCut::Columns}) {
          if (panels == 0 && cut != PanelCut::None) continue;
          INFO("panels ", panels, " cut ", static_cast<int>(cut));
          std::vector<double> out = C;
          if (panels == 0) {
            blas::gemm<double>(tA, tB, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, out.data(), ldc);
          } else {
            blas::detail::gemm_in_panels<double>(panels, cut, tA, tB, M, N, K, alpha, A.data(), lda, B.data(), ldb,
                                                 beta, out.data(), ldc);
          }
          double err = 0;
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) err = std::max(err, std::abs(out[i * ldc + j] - want[i * ldc + j]));
            CHECK(out[i * ldc + N] == want[i * ldc + N]);  // the padding column is left alone
          }
          CHECK(err <= 1e-12);
        }
    }
  }
  // Note [Which side of C to cut]: narrow C by rows, short and wide by columns, else OpenBLAS's own
  using blas::detail::PanelCut, blas::detail::panel_cut;
  CHECK(panel_cut(512, 49, 2, false) == PanelCut::Rows);
  CHECK(panel_cut(512, 2048, 2, false) == PanelCut::Rows);
  CHECK(panel_cut(64, 3136, 2, false) == PanelCut::Columns);
  CHECK(panel_cut(128, 256, 2, false) == PanelCut::Columns);
  CHECK(panel_cut(256, 3136, 2, false) == PanelCut::None);
  CHECK(panel_cut(256, 3136, 2, true) == PanelCut::Columns);
  CHECK(panel_cut(100, 20, 2, true) == PanelCut::Rows);
  const std::string backend = blas::backend();
  CHECK((backend == "Eigen" || backend == "OpenBLAS (OpenMP build)" ||
         backend == "OpenBLAS (one thread a call, panels on OpenMP)"));
}

TEST_CASE(
    "blas::gemm: beta 0 ignores NaN in C, K 0 only scales C, and a leading dimension BLAS would refuse "
    "still computes (Note [OpenBLAS products])") {
  const int64_t M = 3, N = 4, K = 5;
  std::vector<float> A(M * K), B(K * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = 0.125f * static_cast<float>(i % 5) - 0.25f;
  std::vector<float> want(M * N, 0.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) want[i * N + j] += A[i * K + k] * B[k * N + j];
  std::vector<float> C(M * N, std::numeric_limits<float>::quiet_NaN());
  blas::gemm<float>(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
  for (size_t i = 0; i < C.size(); ++i) CHECK(C[i] == doctest::Approx(want[i]).epsilon(1e-6));

  std::vector<float> D(M * N, 2.f);
  blas::gemm<float>(false, false, M, N, 0, 1.f, A.data(), 1, B.data(), N, 0.5f, D.data(), N);
  for (float v : D) CHECK(v == 1.f);

  // one row of A with lda 0: BLAS requires lda >= K and would print an error and skip the product
  std::vector<float> row(N, -7.f);
  blas::gemm<float>(false, false, 1, N, K, 1.f, A.data(), 0, B.data(), N, 0.f, row.data(), N);
  for (int64_t j = 0; j < N; ++j) CHECK(row[j] == doctest::Approx(want[j]).epsilon(1e-6));

  // one row and one column of C (Note [Products with one row or column]): beta 0 ignores NaN too
  std::vector<float> first_row(N, std::numeric_limits<float>::quiet_NaN());
  blas::gemm<float>(false, false, 1, N, K, 1.f, A.data(), K, B.data(), N, 0.f, first_row.data(), N);
  for (int64_t j = 0; j < N; ++j) CHECK(first_row[j] == doctest::Approx(want[j]).epsilon(1e-6));
  std::vector<float> first_col(M * 2, std::numeric_limits<float>::quiet_NaN());
  blas::gemm<float>(false, false, M, 1, K, 1.f, A.data(), K, B.data(), N, 0.f, first_col.data(), 2);
  for (int64_t i = 0; i < M; ++i) {
    CHECK(first_col[i * 2] == doctest::Approx(want[i * N]).epsilon(1e-6));
    CHECK(std::isnan(first_col[i * 2 + 1]));  // between the rows of C: left alone
  }
}

TEST_CASE("blas::kernels: OpenBLAS's Prescott fallback is not kept on a CPU with AVX2 or AVX-512") {
  // Note [OpenBLAS on a CPU it does not know] in tensor/Blas.cpp
  const std::string k = blas::kernels();
  INFO(k);
  if (k.rfind("OpenBLAS", 0) != 0) {
    CHECK(k == "Eigen, as compiled");
    return;
  }
  CHECK(k.rfind("OpenBLAS core ", 0) == 0);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool capable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (capable && std::getenv("OPENBLAS_CORETYPE") == nullptr) CHECK(k.find("core Prescott") == std::string::npos);
#endif
}
