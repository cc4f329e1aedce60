// test_Config.cpp: the flags (no GPU needed): names, aliases, policies, errors, scoping.
#include <doctest/doctest.h>

#include <cudnn.h>

#include "cudnn/Config.h"  // the old path forwards to cudnn/core/Config.h (kept for a release)
#include "cudnn/core/Config.h"
#include "cudnn/core/Layout.h"
#include "cudnn/core/ScopedSetting.h"
#include "tensor/DType.h"

using namespace cudnn;

TEST_CASE("algorithm names map to cuDNN's enums as Theano maps them") {
  CHECK(AlgoSetting::parse(ConvPass::Forward, "none").algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "small").algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "large").algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "fft").algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "fft_tiling").algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "winograd").algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "winograd_non_fused").algo ==
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
  CHECK(AlgoSetting::parse(ConvPass::Forward, "winograd_nonfused").algo ==
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
  CHECK(AlgoSetting::parse(ConvPass::BackwardFilter, "none").algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  CHECK(AlgoSetting::parse(ConvPass::BackwardFilter, "deterministic").algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  CHECK(AlgoSetting::parse(ConvPass::BackwardFilter, "small").algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
  CHECK(AlgoSetting::parse(ConvPass::BackwardFilter, "fft_tiling").algo ==
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING);
  CHECK(AlgoSetting::parse(ConvPass::BackwardData, "deterministic").algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  CHECK(AlgoSetting::parse(ConvPass::BackwardData, "winograd").algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD);
  CHECK_THROWS_WITH_AS(AlgoSetting::parse(ConvPass::BackwardFilter, "winograd"),
                       doctest::Contains("conv.algo_bwd_filter has no value 'winograd' (accepted: none, deterministic"),
                       tensor::Error);
  CHECK_THROWS_AS(AlgoSetting::parse(ConvPass::BackwardData, "small"), tensor::Error);
  const AlgoSetting once = AlgoSetting::parse(ConvPass::Forward, "time_once");
  CHECK(once.policy == AlgoSetting::Policy::TimeOnce);
  CHECK(once.timed());
  CHECK(once.once());
  CHECK_FALSE(AlgoSetting::parse(ConvPass::Forward, "guess_on_shape_change").timed());
  CHECK(std::string(once.name) == "time_once");
  CHECK(std::string(AlgoSetting::parse(ConvPass::Forward, "winograd_nonfused").name) == "winograd_nonfused");
  CHECK(AlgoSetting::parse(ConvPass::Forward, "small") == AlgoSetting::parse(ConvPass::Forward, std::string("small")));
  CHECK_FALSE(AlgoSetting::parse(ConvPass::Forward, "winograd_nonfused") ==
              AlgoSetting::parse(ConvPass::Forward, "winograd_non_fused"));
  CHECK(std::string(algo_name(ConvPass::Forward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)) ==
        "IMPLICIT_PRECOMP_GEMM");
  CHECK(std::string(algo_name(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD)) == "UNKNOWN");
}

TEST_CASE("the algorithm table: 3-D support, determinism and last resorts") {
  auto row = [](ConvPass pass, int algo) {
    const ConvAlgorithm* a = find_algorithm(pass, algo);
    REQUIRE(a != nullptr);
    return *a;
  };
  // 3-D support as Theano lists it
  CHECK(row(ConvPass::Forward, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING).in_3d);
  CHECK_FALSE(row(ConvPass::Forward, CUDNN_CONVOLUTION_FWD_ALGO_FFT).in_3d);
  CHECK_FALSE(row(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1).in_3d);
  CHECK(row(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3).in_3d);
  CHECK(row(ConvPass::BackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1).in_3d);
  // the algorithms that accumulate with atomics
  int nondeterministic = 0;
  for (ConvPass pass : {ConvPass::Forward, ConvPass::BackwardData, ConvPass::BackwardFilter}) {
    for (const ConvAlgorithm& a : conv_algorithms(pass)) {
      CHECK(a.pass == pass);
      if (!a.deterministic) ++nondeterministic;
    }
  }
  CHECK(nondeterministic == 3);
  CHECK_FALSE(row(ConvPass::BackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0).deterministic);
  CHECK_FALSE(row(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0).deterministic);
  CHECK_FALSE(row(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3).deterministic);
  CHECK(conv_algorithms(ConvPass::Forward).size() == 9);
  CHECK(conv_algorithms(ConvPass::BackwardData).size() == 7);
  CHECK(conv_algorithms(ConvPass::BackwardFilter).size() == 7);
  // last resorts: no workspace; ALGO_1 when deterministic
  CHECK(last_resort(ConvPass::Forward, false).algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(last_resort(ConvPass::Forward, true).algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(last_resort(ConvPass::BackwardData, false).algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
  CHECK(last_resort(ConvPass::BackwardData, true).algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  CHECK(last_resort(ConvPass::BackwardFilter, false).algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  CHECK(last_resort(ConvPass::BackwardFilter, true).algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  CHECK(find_algorithm(ConvPass::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD) == nullptr);
}

TEST_CASE("set_flags: each bool flag sets its own field and no other (as str() reports them)") {
  const std::string before = config().str();
  for (const std::string key : {"benchmark", "fastest", "verbose", "deterministic", "allow_tf32", "conv.graph",
                                "channels_last", "attention.fused"}) {
    CAPTURE(key);
    const std::string on = "," + key + "=true", off = "," + key + "=false";
    const size_t at = before.find(on) != std::string::npos ? before.find(on) : before.find(off);
    REQUIRE(at != std::string::npos);
    const bool was = before.compare(at, on.size(), on) == 0;
    std::string expected = before;
    expected.replace(at, (was ? on : off).size(), was ? off : on);
    ScopedConfig flipped(key + (was ? "=false" : "=true"));
    CHECK(config().str() == expected);
  }
  CHECK(config().str() == before);
}

TEST_CASE("set_flags parses every key, rejects bad ones, and ScopedConfig restores") {
  const Config before = config();
  {
    ScopedConfig scoped(
        "benchmark=true,fastest=1,verbose=false,deterministic=true,allow_tf32=false,"
        "workspace_limit=512M,conv.algo_fwd=small,conv.algo_bwd_data=time_on_shape_change,"
        "conv.precision=as_input,enabled=no_check,conv.graph=false,conv.cache_limit=64");
    const Config& c = config();
    CHECK(c.benchmark);
    CHECK(c.fastest);
    CHECK(c.deterministic);
    CHECK_FALSE(c.allow_tf32);
    CHECK(c.workspace_limit == size_t(512) << 20);
    CHECK(c.algo_fwd.policy == AlgoSetting::Policy::Fixed);
    CHECK(c.algo_bwd_data.policy == AlgoSetting::Policy::TimeOnShapeChange);
    CHECK(c.precision == Precision::AsInput);
    CHECK(c.enabled == Enabled::NoCheck);
    CHECK_FALSE(c.conv_graph);
    CHECK(c.str().find("conv.graph=false") != std::string::npos);
    CHECK(c.conv_cache_limit == 64);
    CHECK(c.str().find("conv.cache_limit=64") != std::string::npos);
    CHECK(c.str().find("workspace_limit=536870912") != std::string::npos);
  }
  CHECK(config().str() == before.str());
  CHECK_THROWS_WITH_AS(set_flags("benchmark=maybe"), "cudnn flags: benchmark expects true or false, got 'maybe'",
                       tensor::Error);
  CHECK_THROWS_WITH_AS(set_flags("workspace_limit=lots"), doctest::Contains("expects a byte count"), tensor::Error);
  CHECK_THROWS_WITH_AS(set_flags("colour=blue"), doctest::Contains("unknown key 'colour'"), tensor::Error);
  for (const char* bad :
       {"conv.cache_limit=-1", "conv.cache_limit=lots", "conv.cache_limit=10k", "conv.cache_limit="}) {
    CHECK_THROWS_WITH_AS(set_flags(bad), doctest::Contains("conv.cache_limit expects a whole number of entries"),
                         tensor::Error);
  }
  CHECK(config().conv_cache_limit == 10000);  // the default, as PyTorch's plan cache
  // the timed search's trial cap and tolerance (Note [Trial workspaces] in cudnn/ops/conv_search.cpp)
  CHECK(config().conv_search_workspace == Config::kSearchWorkspaceAuto);  // 4x for float32, 2x for 16-bit
  CHECK(config().conv_search_tolerance == 0.02);
  {
    ScopedConfig scoped("conv.search_workspace=0.25,conv.search_tolerance=0");
    CHECK(config().conv_search_workspace == 0.25);
    CHECK(config().conv_search_tolerance == 0);
    CHECK(config().str().find("conv.search_workspace=0.25,conv.search_tolerance=0,") != std::string::npos);
    const std::string printed = config().str();
    set_flags(printed);  // what str() prints parses back to the same flags
    CHECK(config().str() == printed);
  }
  CHECK(config().str().find("conv.search_workspace=auto,conv.search_tolerance=0.02,") != std::string::npos);
  {
    ScopedConfig fixed("conv.search_workspace=4");
    CHECK(config().conv_search_workspace == 4.0);
    set_flags("conv.search_workspace=auto");
    CHECK(config().conv_search_workspace == Config::kSearchWorkspaceAuto);
  }
  CHECK_THROWS_WITH_AS(set_flags("conv.search_workspace=automatic"), doctest::Contains("or auto"), tensor::Error);
  for (const char* bad : {"conv.search_workspace=-1", "conv.search_workspace=lots", "conv.search_workspace=2x",
                          "conv.search_tolerance=", "conv.search_tolerance=inf", "conv.search_tolerance=nan"}) {
    CHECK_THROWS_WITH_AS(set_flags(bad), doctest::Contains("expects a non-negative number"), tensor::Error);
  }
  CHECK_THROWS_WITH_AS(set_flags("benchmark"), doctest::Contains("expected key=value"), tensor::Error);
  // a failed set_flags changes nothing
  CHECK_THROWS_AS(set_flags("benchmark=true,conv.precision=float8"), tensor::Error);
  CHECK(config().str() == before.str());
  set_flags("workspace_limit=2G");
  CHECK(config().workspace_limit == size_t(2) << 30);
  config() = before;
}

TEST_CASE("channels_last flag: parsed, printed, and what activation_format makes of it") {
  using tensor::MemoryFormat;
  const tensor::Tensor nchw = tensor::empty({2, 3, 4, 5});
  const tensor::Tensor nhwc = nchw.contiguous(MemoryFormat::ChannelsLast);
  const tensor::Tensor ncdhw = tensor::empty({2, 3, 2, 4, 5});
  const tensor::Tensor flat = tensor::empty({2, 3});
  CHECK_FALSE(config().channels_last);
  CHECK(config().str().find("channels_last=false") != std::string::npos);
  // off: the twins keep the layout they are given
  CHECK(activation_format(nchw) == MemoryFormat::Contiguous);
  CHECK(activation_format(nhwc) == MemoryFormat::ChannelsLast);
  CHECK(activation_format(ncdhw) == MemoryFormat::Contiguous);
  CHECK(activation_format(flat) == MemoryFormat::Contiguous);
  {
    ScopedConfig on("channels_last=true");
    CHECK(config().channels_last);
    CHECK(config().str().find("channels_last=true") != std::string::npos);
    // on: every 4-d and 5-d activation is computed channels-last; other ranks stay row-major
    CHECK(activation_format(nchw) == MemoryFormat::ChannelsLast);
    CHECK(activation_format(ncdhw) == MemoryFormat::ChannelsLast);
    CHECK(activation_format(flat) == MemoryFormat::Contiguous);
    // float64 stays row-major either way: cuDNN's NHWC kernels are for 16- and 32-bit data
    CHECK(activation_format(nchw.to(tensor::DType::Float64)) == MemoryFormat::Contiguous);
    CHECK(activation_format(nhwc.to(tensor::DType::Float64)) == MemoryFormat::Contiguous);
  }
  CHECK(activation_format(nhwc.to(tensor::DType::Float64)) == MemoryFormat::Contiguous);
  CHECK_FALSE(config().channels_last);
  CHECK_THROWS_WITH_AS(set_flags("channels_last=maybe"),
                       "cudnn flags: channels_last expects true or false, got 'maybe'", tensor::Error);
}

TEST_CASE("layernorm.engine and pool.backward: fields of config(), parsed, refused by name, restored by ScopedConfig") {
  // the defaults
  CHECK(config().layernorm_engine == LayerNormEngine::Ours);
  CHECK(config().pool_backward == PoolBackward::Auto);
  {
    ScopedConfig scoped("layernorm.engine=cudnn,pool.backward=ours");
    CHECK(config().layernorm_engine == LayerNormEngine::Cudnn);
    CHECK(config().pool_backward == PoolBackward::Ours);
    set_flags("pool.backward=cudnn");  // a change inside the scope is undone with it
    CHECK(config().pool_backward == PoolBackward::Cudnn);
    set_flags("layernorm.engine=ours,pool.backward=auto");
    CHECK(config().layernorm_engine == LayerNormEngine::Ours);
    CHECK(config().pool_backward == PoolBackward::Auto);
    set_flags("layernorm.engine=cudnn,pool.backward=cudnn");
  }
  CHECK(config().layernorm_engine == LayerNormEngine::Ours);
  CHECK(config().pool_backward == PoolBackward::Auto);
  // every name parses to its value and back
  for (LayerNormEngine e : {LayerNormEngine::Ours, LayerNormEngine::Cudnn}) {
    ScopedConfig scoped(std::string("layernorm.engine=") + layer_norm_engine_name(e));
    CHECK(config().layernorm_engine == e);
  }
  for (PoolBackward b : {PoolBackward::Auto, PoolBackward::Ours, PoolBackward::Cudnn}) {
    ScopedConfig scoped(std::string("pool.backward=") + pool_backward_name(b));
    CHECK(config().pool_backward == b);
  }
  CHECK(std::string(layer_norm_engine_name(LayerNormEngine::Cudnn)) == "cudnn");
  CHECK(std::string(pool_backward_name(PoolBackward::Auto)) == "auto");
  // a bad value is refused naming the flag and what it accepts, and changes nothing (the other
  // flags of the same call included)
  const Config before = config();
  CHECK_THROWS_WITH_AS(set_flags("layernorm.engine=fast"),
                       "cudnn flags: layernorm.engine expects ours or cudnn, got 'fast'", tensor::Error);
  CHECK_THROWS_WITH_AS(set_flags("pool.backward=fast"),
                       "cudnn flags: pool.backward expects auto, ours or cudnn, got 'fast'", tensor::Error);
  CHECK_THROWS_AS(set_flags("layernorm.engine=cudnn,pool.backward=ours,benchmark=maybe"), tensor::Error);
  CHECK(config().layernorm_engine == before.layernorm_engine);
  CHECK(config().pool_backward == before.pool_backward);
  CHECK(config().str() == before.str());
}

TEST_CASE("groupnorm.engine: a field of config(), cudnn by default, parsed, refused by name, restored") {
  CHECK(config().groupnorm_engine == GroupNormEngine::Cudnn);
  {
    ScopedConfig scoped("groupnorm.engine=kernel");
    CHECK(config().groupnorm_engine == GroupNormEngine::Kernel);
    set_flags("groupnorm.engine=cudnn");
    CHECK(config().groupnorm_engine == GroupNormEngine::Cudnn);
    set_flags("groupnorm.engine=kernel");
  }
  CHECK(config().groupnorm_engine == GroupNormEngine::Cudnn);
  for (GroupNormEngine e : {GroupNormEngine::Kernel, GroupNormEngine::Cudnn}) {
    ScopedConfig scoped(std::string("groupnorm.engine=") + group_norm_engine_name(e));
    CHECK(config().groupnorm_engine == e);
  }
  CHECK(std::string(group_norm_engine_name(GroupNormEngine::Kernel)) == "kernel");
  CHECK(std::string(group_norm_engine_name(GroupNormEngine::Cudnn)) == "cudnn");
  const Config before = config();
  // layernorm.engine's "ours" is not one of its values
  CHECK_THROWS_WITH_AS(set_flags("groupnorm.engine=ours"),
                       "cudnn flags: groupnorm.engine expects kernel or cudnn, got 'ours'", tensor::Error);
  CHECK_THROWS_AS(set_flags("groupnorm.engine=cudnn,benchmark=maybe"), tensor::Error);
  CHECK(config().groupnorm_engine == before.groupnorm_engine);
  CHECK_THROWS_WITH_AS(set_flags("group_norm.engine=cudnn"), doctest::Contains("groupnorm.engine, linear.engine)"),
                       tensor::Error);
  {
    const ScopedSetting<&Config::groupnorm_engine> kernel(GroupNormEngine::Kernel);
    CHECK(config().groupnorm_engine == GroupNormEngine::Kernel);
  }
  CHECK(config().groupnorm_engine == GroupNormEngine::Cudnn);
  CHECK(config().str() == before.str());
}

TEST_CASE("ScopedSetting restores one flag of config() and leaves the others") {
  {
    const ScopedSetting<&Config::pool_backward> ours(PoolBackward::Ours);
    CHECK(config().pool_backward == PoolBackward::Ours);
    set_flags("layernorm.engine=cudnn");
    {
      const ScopedSetting<&Config::layernorm_engine> inner(LayerNormEngine::Ours);
      CHECK(config().layernorm_engine == LayerNormEngine::Ours);
    }
    CHECK(config().layernorm_engine == LayerNormEngine::Cudnn);
    set_flags("layernorm.engine=ours");
  }
  CHECK(config().pool_backward == PoolBackward::Auto);
  CHECK(config().layernorm_engine == LayerNormEngine::Ours);
}

TEST_CASE("conv.heuristics: a field of config(), a by default, parsed, printed, refused by name, restored") {
  CHECK(config().conv_heuristics == ConvHeuristics::A);
  CHECK(config().str().find(",conv.heuristics=a,") != std::string::npos);
  {
    ScopedConfig scoped("conv.heuristics=b");
    CHECK(config().conv_heuristics == ConvHeuristics::B);
    CHECK(std::string(conv_heuristics_name(config().conv_heuristics)) == "b");
    CHECK(config().str().find(",conv.heuristics=b,") != std::string::npos);
  }
  CHECK(config().conv_heuristics == ConvHeuristics::A);
  CHECK_THROWS_WITH_AS(set_flags("conv.heuristics=c"), "cudnn flags: conv.heuristics expects a or b, got 'c'",
                       tensor::Error);
  CHECK(config().conv_heuristics == ConvHeuristics::A);
}

TEST_CASE("linear.engine: a field of config(), auto by default, parsed, refused by name, restored") {
  CHECK(config().linear_engine == LinearEngine::Auto);
  {
    ScopedConfig scoped("linear.engine=cublas");
    CHECK(config().linear_engine == LinearEngine::Cublas);
    CHECK(std::string(linear_engine_name(config().linear_engine)) == "cublas");
    set_flags("linear.engine=auto");
    CHECK(config().linear_engine == LinearEngine::Auto);
    set_flags("linear.engine=cublas");
  }
  CHECK(config().linear_engine == LinearEngine::Auto);
  CHECK_THROWS_WITH_AS(set_flags("linear.engine=kernel"),
                       "cudnn flags: linear.engine expects auto or cublas, got 'kernel'", tensor::Error);
  CHECK(config().linear_engine == LinearEngine::Auto);
}
