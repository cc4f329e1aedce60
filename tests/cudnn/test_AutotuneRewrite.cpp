// test_AutotuneRewrite.cpp: what cudnn::autotune decides without a GPU (the twins are built on
// the CPU, as in test_FuseRewrite.cpp): it fuses, says why it did not time the layouts and hands
// the network back itself, refuses an untimed channels-last it cannot apply, and takes its own
// wrapper apart again. The timed choices and the wrapped passes: test_Autotune.cpp (GPU).
#include <doctest/doctest.h>

#include "cudnn/Autotune.h"
#include "cudnn/Contiguous.h"
#include "cudnn/ReLU.h"
#include "cudnn/SpatialConvolution.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"

using namespace tensor;

namespace {

// conv + ReLU: one pair to fuse
nn::ModulePtr twin_network() {
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<cudnn::SpatialConvolution>(3, 4, 3, 3, 1, 1, 1, 1), std::make_shared<cudnn::ReLU>()});
}

}  // namespace

TEST_CASE("autotune without a GPU example: fuses, says why, and hands the network back") {
  Generator gen(4131);
  const Tensor x = uniform({2, 3, 8, 8}, -1, 1, gen);
  nn::ModulePtr net = twin_network();
  cudnn::AutotuneReport report;
  CHECK(cudnn::autotune(net, x, {}, &report) == net);
  CHECK_FALSE(report.timed);
  CHECK(report.chosen == MemoryFormat::Contiguous);
  CHECK(report.str() == "fused 1; layout not timed: the example is on cpu, not a CUDA device");
  CHECK(net->str().find("cudnn.FusedConvolution") != std::string::npos);

  cudnn::AutotuneOptions keep;
  keep.layout = cudnn::LayoutChoice::Keep;
  keep.fuse = false;
  CHECK(cudnn::autotune(twin_network(), x, keep, &report) != nullptr);
  CHECK(report.str() == "fused 0; layout not timed: layout: keep");

  auto cpuNet = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3), std::make_shared<nn::ReLU>()});
  CHECK(cudnn::autotune(cpuNet, x, {}, &report) == cpuNet);
  CHECK(report.fused == 0);  // fuse rewrites cudnn twins only
  CHECK(report.skipped == "the network has no cudnn module (convert it first)");

  cudnn::AutotuneOptions channelsLast;
  channelsLast.layout = cudnn::LayoutChoice::ChannelsLast;
  CHECK_THROWS_WITH_AS(cudnn::autotune(twin_network(), x, channelsLast),
                       "cudnn::autotune: layout ChannelsLast: the example is on cpu, not a CUDA device", Error);
  cudnn::AutotuneOptions bad;
  bad.minGain = 1;
  CHECK_THROWS_WITH_AS(cudnn::autotune(twin_network(), x, bad),
                       "cudnn::autotune: expected iterations >= 1, warmup >= 0 and 0 <= minGain < 1, got 10, 3 and "
                       "1.000000",
                       Error);
}

TEST_CASE("autotune takes its own wrapper apart, and only that shape") {
  Generator gen(4132);
  const Tensor x = uniform({2, 3, 8, 8}, -1, 1, gen);
  cudnn::AutotuneOptions keep;
  keep.layout = cudnn::LayoutChoice::Keep;
  for (bool trailing : {false, true}) {
    nn::ModulePtr net = twin_network();
    auto wrapper = std::make_shared<nn::Sequential>(
        std::initializer_list<nn::ModulePtr>{std::make_shared<cudnn::Contiguous>(MemoryFormat::ChannelsLast), net});
    if (trailing) wrapper->add(std::make_shared<cudnn::Contiguous>(MemoryFormat::Contiguous));
    wrapper->setGradInputNeeded(false);
    CHECK(net->gradInputNeeded());
    CHECK(cudnn::autotune(wrapper, x, keep) == net);
    CHECK_FALSE(net->gradInputNeeded());  // the wrapper's switch-off passes to the network
  }
  // other shapes are the caller's own networks, kept whole
  nn::ModulePtr net = twin_network();
  auto notOurs = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<cudnn::Contiguous>(MemoryFormat::Contiguous), net});
  CHECK(cudnn::autotune(notOurs, x, keep) == notOurs);
  auto wrongEnd = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<cudnn::Contiguous>(MemoryFormat::ChannelsLast), net,
                                           std::make_shared<cudnn::Contiguous>(MemoryFormat::ChannelsLast)});
  CHECK(cudnn::autotune(wrongEnd, x, keep) == wrongEnd);
}
