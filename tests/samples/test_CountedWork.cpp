// test_CountedWork.cpp: samples::count_work (the roofline columns' FLOPs and bytes, Note [Counted
// work] in samples/CountedWork.cpp) on tiny networks, against counts worked out by hand: a
// convolution, a ReLU and a Linear; the same residual unit as nn::Residual and as nn::Graph; a
// fused pair whose parts' outputs are empty (as the cudnn twins leave them); pooling; an LSTM.
#include <doctest/doctest.h>

#include <memory>

#include "nn/CAddTable.h"
#include "nn/FusedConvolution.h"
#include "nn/Graph.h"
#include "nn/LSTM.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialCrossMapLRN.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"
#include "samples/CountedWork.h"

using namespace tensor;

namespace {

std::shared_ptr<nn::Sequential> conv_relu_linear() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::SpatialConvolution>(2, 3, 3, 3, 1, 1, 1, 1));  // 2 -> 3, 3x3, pad 1
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::View>(Shape{48}));
  net->add(std::make_shared<nn::Linear>(48, 5));
  return net;
}

}  // namespace

TEST_CASE("count_work: a convolution, a ReLU and a Linear, counted by hand") {
  Generator gen(4901);
  auto net = conv_relu_linear();
  const Tensor x = uniform({2, 2, 4, 4}, -1, 1, gen);
  net->forward(x);
  const samples::CountedWork w = samples::count_work(*net, x.sizes(), DType::Float32, false);
  // conv: out [2 x 3 x 4 x 4] = 96, in 64, W = 3*2*3*3 + 3 = 57; 2*N*K*C*R*S*P*Q = 2*2*3*2*9*16 = 3456
  //   forward 3456 FLOPs, 4 * (64 + 96 + 57) = 868 bytes; backward the weight gradient alone
  //   (the input needs none): 3456, 4 * (96 + 64 + 57) = 868
  // ReLU: 96 FLOPs, 4 * (96 + 96) = 768; backward 96, 4 * (96 + 2*96) = 1152
  // View: nothing
  // Linear 48 -> 5: out 10, in 96, W = 245; 2*2*48*5 = 960 FLOPs, 4 * (96 + 10 + 245) = 1404;
  //   backward 1920, 4 * (10 + 96 + 245) + 4 * (245 + 96) = 2768
  CHECK(w.forward.flops == 3456 + 96 + 960);
  CHECK(w.forward.bytes == 868 + 768 + 1404);
  CHECK(w.backward.flops == 3456 + 96 + 1920);
  CHECK(w.backward.bytes == 868 + 1152 + 2768);
  CHECK(w.parameters == 57 + 245);
  CHECK(w.outputElements == 10);
  CHECK(w.uncounted.empty());
  REQUIRE(w.layers.size() == 4);  // each top-level child's share
  CHECK(w.layers[0].forward.flops == 3456);
  CHECK(w.layers[1].backward.bytes == 1152);
  CHECK(w.layers[2].forward.bytes == 0);
  CHECK(w.layers[3].backward.flops == 1920);
  // the step: loss 4 * 2 * 10, SGD with momentum 302 * (4 + 2 * 2 * 4)
  CHECK(w.step(1, 4, 4).bytes == 3040 + 4788 + 80 + 302 * 20);
  CHECK(w.step(1, 4, 4).flops == w.forwardBackward().flops);

  // the input's gradient: the convolution's data gradient too, 3456 FLOPs, 4 * (57 + 64) bytes
  const samples::CountedWork g = samples::count_work(*net, x.sizes(), DType::Float32, true);
  CHECK(g.backward.flops == w.backward.flops + 3456);
  CHECK(g.backward.bytes == w.backward.bytes + 484);
  // bfloat16: the same FLOPs, half the bytes; a mixed-precision step keeps float32 masters
  const samples::CountedWork h = samples::count_work(*net, x.sizes(), DType::BFloat16, false);
  CHECK(h.forward.flops == w.forward.flops);
  CHECK(h.forward.bytes == w.forward.bytes / 2);
  // loss in float32, the gradient read and the weight written in 2 bytes, 2 * 2 * 4 master bytes
  CHECK(h.step(1, 4, 4).bytes == (3040 + 4788) / 2 + 80 + 302 * (2 + 16 + 2));
}

TEST_CASE("count_work: a residual unit counts the same as nn::Residual and as nn::Graph") {
  Generator gen(4902);
  auto conv = [] { return std::make_shared<nn::SpatialConvolution>(4, 4, 1, 1); };
  auto bn = [] { return std::make_shared<nn::SpatialBatchNormalization>(4); };
  auto block = std::make_shared<nn::Sequential>();
  block->add(conv()).add(bn());
  auto residual = std::make_shared<nn::Sequential>();
  residual->add(std::make_shared<nn::Residual>(block)).add(std::make_shared<nn::ReLU>());
  const Tensor x = uniform({2, 4, 3, 3}, -1, 1, gen);
  residual->forward(x);
  const samples::CountedWork r = samples::count_work(*residual, x.sizes(), DType::Float32, true);
  // conv 1x1 4 -> 4 on 72 elements: 2*72*4 = 576 FLOPs, W = 20; batch norm 4 * 72, W = 8; the
  // sum 72; ReLU 72. Bytes forward: 4 * (72 + 72 + 20) + 4 * (72 + 72 + 8) + 4 * 3 * 72 +
  // 4 * (72 + 72) = 656 + 608 + 864 + 576
  CHECK(r.forward.flops == 576 + 288 + 72 + 72);
  CHECK(r.forward.bytes == 656 + 608 + 864 + 576);
  // backward: conv 2 * 576, 4 * (72 + 72 + 20) + 4 * (20 + 72); batch norm 288, 4 * (72 + 144 + 8);
  // ReLU 72, 4 * 216; the input's two gradients summed: 72, 4 * 3 * 72
  CHECK(r.backward.flops == 1152 + 288 + 72 + 72);
  CHECK(r.backward.bytes == 656 + 368 + 896 + 864 + 864);

  nn::Node in = nn::Input();
  nn::Node h = nn::call(bn(), nn::call(conv(), in));
  h = nn::call(std::make_shared<nn::ReLU>(), nn::call(std::make_shared<nn::CAddTable>(), {h, in}));
  nn::Graph graph(in, h);
  graph.forward(x);
  const samples::CountedWork g = samples::count_work(graph, x.sizes(), DType::Float32, true);
  CHECK(g.forward.flops == r.forward.flops);
  CHECK(g.forward.bytes == r.forward.bytes);
  CHECK(g.backward.flops == r.backward.flops);
  CHECK(g.backward.bytes == r.backward.bytes);
}

TEST_CASE(
    "count_work: a fused pair counts as its parts; pooling by its window; an LSTM; unknown modules named; no forward, "
    "no count") {
  Generator gen(4903);
  auto plain = std::make_shared<nn::Sequential>();
  plain->add(std::make_shared<nn::SpatialConvolution>(2, 3, 3, 3, 1, 1, 1, 1)).add(std::make_shared<nn::ReLU>());
  plain->add(std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2));
  auto fused = std::make_shared<nn::Sequential>();
  auto pair = std::make_shared<nn::FusedConvolution>(std::make_shared<nn::SpatialConvolution>(2, 3, 3, 3, 1, 1, 1, 1),
                                                     std::make_shared<nn::ReLU>());
  fused->add(pair).add(std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2));
  const Tensor x = uniform({2, 2, 4, 4}, -1, 1, gen);
  plain->forward(x);
  fused->forward(x);
  pair->modules[0]->output = Tensor();  // as cudnn.FusedConvolution leaves it: the pair's output is the result
  const samples::CountedWork p = samples::count_work(*plain, x.sizes(), DType::Float32, false);
  const samples::CountedWork f = samples::count_work(*fused, x.sizes(), DType::Float32, false);
  CHECK(f.forward.flops == p.forward.flops);
  CHECK(f.forward.bytes == p.forward.bytes);
  CHECK(f.backward.bytes == p.backward.bytes);
  // the pooling: 2x2 windows over [2 x 3 x 2 x 2] = 24 outputs: 96 FLOPs, 4 * (96 + 24) bytes
  CHECK(p.layers.at(2).forward.flops == 96);
  CHECK(p.layers.at(2).forward.bytes == 480);

  // an LSTM (4 gates) 3 -> 4 on [5 x 2 x 3]: the 10 rows through [16 x 3] and [16 x 4]: 2 * 10 * 112
  // FLOPs; W = 48 + 64 + 2 * 16 = 144, in 30, out 40; backward with its data gradient (always)
  nn::LSTM lstm(3, 4, 1);
  const Tensor seq = uniform({5, 2, 3}, -1, 1, gen);
  lstm.forward(seq);
  const samples::CountedWork l = samples::count_work(lstm, seq.sizes(), DType::Float32, false);
  CHECK(l.forward.flops == 2240);
  CHECK(l.forward.bytes == 4 * (30 + 40 + 144));
  CHECK(l.backward.flops == 2 * 2240);
  CHECK(l.backward.bytes == 4 * (40 + 30 + 144 + 144 + 30));

  // a module the counter does not know: counted as nothing, and named
  auto lrn = std::make_shared<nn::Sequential>();
  lrn->add(std::make_shared<nn::SpatialCrossMapLRN>(3)).add(std::make_shared<nn::ReLU>());
  lrn->forward(x);
  const samples::CountedWork u = samples::count_work(*lrn, x.sizes(), DType::Float32, false);
  CHECK(u.uncounted == std::vector<std::string>{"nn.SpatialCrossMapLRN"});
  CHECK(u.forward.flops == 64);  // the ReLU's

  auto fresh = conv_relu_linear();
  CHECK_THROWS_WITH_AS(samples::count_work(*fresh, x.sizes(), DType::Float32, false),
                       "samples::count_work: nn.SpatialConvolution has no output to count from: run the network's "
                       "forward first",
                       Error);
}
