// unet: per-pixel segmentation of Fashion-MNIST with a small U-Net (Ronneberger et al. 2015)
// built as one nn::Graph: a 28x28 and a 14x14 encoder level, a 7x7 bottleneck, and a decoder
// that upsamples and joins each encoder level's features back in (the skip connections). Each
// pixel's target is 0 (background) where the image is darker than --threshold (0.2 of the
// [0, 1] range), else 1 + the image's class: 11 classes, so the network has to outline the
// garment and name it from the whole image. Trains with Adam on the CPU (nn) or, with
// --backend cudnn, converted to cuDNN on the GPU; prints the test set's pixel accuracy and
// foreground pixel accuracy per epoch, saves the model and checks that the saved file gives
// the same predictions.
//
//   unet [--data DIR] [--backend nn|cudnn] [--epochs N] [--batch-size N] [--lr X] [--seed N]
//        [--limit N] [--test-limit N] [--threshold X] [--save PATH] [--print-graph] [--dot FILE]
//        [--quiet]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "nn/Adam.h"
#include "nn/Graph.h"
#include "nn/JoinTable.h"
#include "nn/ReLU.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/SpatialUpSamplingNearest.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"
#include "train/Data.h"
#include "train/Idx.h"

using tensor::Device;
using tensor::DType;
using tensor::Tensor;

namespace {

constexpr int64_t kClasses = 11;  // background and Fashion-MNIST's 10 classes

struct Options {
  std::string data = nn::kFashionMnistDir;
  std::string backend = "nn";
  int64_t epochs = 2;
  int64_t batch = 64;
  double lr = 2e-3;
  uint64_t seed = 1;
  int64_t limit = 0;       // train on the first N images only (0: all 60000)
  int64_t test_limit = 0;  // evaluate on the first N test images only (0: all 10000)
  double threshold = 0.2;  // a pixel below this (of [0, 1]) is background
  std::string save = "unet_model";
  bool print_graph = false;
  std::string dot;
  bool quiet = false;
};

const char* kUsage =
    "usage: unet [options]\n"
    "  --data DIR        Fashion-MNIST idx files (default /usr/share/datasets/fashion-mnist,\n"
    "                    from the Debian package dataset-fashion-mnist)\n"
    "  --backend B       nn (CPU, default) or cudnn (convert and train on the GPU)\n"
    "  --epochs N        passes over the training set (default 2)\n"
    "  --batch-size N    images per step (default 64; --batch too)\n"
    "  --lr X            Adam's learning rate (default 0.002)\n"
    "  --seed N          initialisation and shuffling seed (default 1)\n"
    "  --limit N         train on the first N images only (default: all 60000)\n"
    "  --test-limit N    evaluate on the first N test images only (default: all 10000)\n"
    "  --threshold X     pixels below X (images scaled to [0, 1]) are background, class 0;\n"
    "                    the others are 1 + the image's class (default 0.2)\n"
    "  --save PATH       where the trained model goes: PATH.json + PATH.safetensors, then\n"
    "                    loaded back and checked to predict the same (default unet_model;\n"
    "                    empty to skip)\n"
    "  --print-graph     print the network's graph (its nodes, then its modules) at the start\n"
    "  --dot FILE        write the graph in Graphviz's dot language (dot -Tsvg FILE)\n"
    "  --quiet           no progress lines within an epoch\n";

namespace fs = std::filesystem;

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .text("--data", o.data)
      .choice("--backend", o.backend, {"nn", "cudnn"})
      .integer("--epochs", o.epochs, 1, 1000)
      .integer("--batch-size", o.batch, 1, 65536)
      .integer("--batch", o.batch, 1, 65536)
      .number("--lr", o.lr, 1e-8, 10)
      .integer("--seed", o.seed, 0, INT64_MAX)
      .integer("--limit", o.limit, 0, INT64_MAX)
      .integer("--test-limit", o.test_limit, 0, INT64_MAX)
      .number("--threshold", o.threshold, 0, 1)
      .text("--save", o.save)
      .set("--print-graph", o.print_graph)
      .text("--dot", o.dot)
      .set("--quiet", o.quiet)
      .parse(args);
  if (o.backend == "cudnn" && tensor::cuda::device_count() == 0) {
    args.fail("--backend cudnn needs a CUDA device, and none is visible (--backend nn trains on the CPU)");
  }
  // what the run writes and reads, before the data is loaded and the network trained
  if (!o.save.empty()) args.writable("--save", o.save);
  if (!o.dot.empty()) args.writable("--dot", o.dot);
  std::error_code ec;
  const std::string images = o.data + "/train-images-idx3-ubyte";
  if (!fs::exists(images + ".gz", ec) && !fs::exists(images, ec)) {
    args.fail("--data: no Fashion-MNIST in '" + o.data + "' (" + images +
              "[.gz] not found): install the Debian package dataset-fashion-mnist (scripts/dev deps) or pass "
              "--data DIR with the four idx files");
  }
  return o;
}

// A split as images, standardised [N x 1 x 28 x 28] float32, and per-pixel targets, Int64
// [N x 28 x 28]; the image classes too, for the majority-vote accuracy.
struct Split {
  Tensor images, targets, labels;
};

// The targets from the [0, 1] images and their labels: 0 below the threshold, else 1 + label.
Tensor pixel_targets(const Tensor& images, const Tensor& labels, double threshold) {
  const int64_t n = images.size(0), pixels = images.size(2) * images.size(3);
  const std::vector<float> x = images.to_vector<float>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  std::vector<int64_t> t(x.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < pixels; ++p) t[i * pixels + p] = x[i * pixels + p] < threshold ? 0 : 1 + y[i];
  }
  return tensor::from_vector(t, {n, images.size(2), images.size(3)});
}

Split load_split(const Options& o, const std::string& split, int64_t limit) {
  const auto d = nn::load_mnist(o.data, split, 10);  // images scaled to [0, 1]
  Split s{d->tensors()[0], Tensor(), d->tensors()[1]};
  if (s.images.size(2) != 28 || s.images.size(3) != 28) {
    throw std::runtime_error("Fashion-MNIST: expected 28 x 28 images in " + o.data + " (" + split + "), got " +
                             s.images.description());
  }
  if (limit > 0 && limit < s.images.size(0)) {
    s.images = s.images.narrow(0, 0, limit).clone();
    s.labels = s.labels.narrow(0, 0, limit).clone();
  }
  s.targets = pixel_targets(s.images, s.labels, o.threshold);
  return s;
}

// conv 3x3 (padded: the size stays), batch norm, ReLU, twice: U-Net's double convolution.
nn::Node conv_block(nn::Node x, int64_t in, int64_t out) {
  for (int i = 0; i < 2; ++i) {
    x = nn::call(std::make_shared<nn::SpatialConvolution>(i == 0 ? in : out, out, 3, 3, 1, 1, 1, 1), x);
    x = nn::call(std::make_shared<nn::SpatialBatchNormalization>(out), x);
    x = nn::call(std::make_shared<nn::ReLU>(true), x);
  }
  return x;
}

// Note [U-Net upsampling]: the decoder doubles the resolution with SpatialUpSamplingNearest(2)
// rather than SpatialUpSamplingBilinear. From a scale, the bilinear module keeps Torch's
// corners-aligned size, (H - 1) 2 + 1: 7 -> 13, which no longer matches the 14x14 skip it is
// joined with (align_corners = false gives 14, but is not Torch's module). Nearest gives exactly
// 2H, has no weights, and the 3x3 convolutions after the join smooth its blocks anyway; it is
// also the cheaper of the two on both backends.
//
//   input [N x 1 x 28 x 28]
//   e1 = block(1 -> 16)                    28x28    (skip)
//   e2 = block(maxpool(e1), 16 -> 32)      14x14    (skip)
//   b  = block(maxpool(e2), 32 -> 64)       7x7     bottleneck
//   d2 = block(join(up(b), e2), 96 -> 32)  14x14
//   d1 = block(join(up(d2), e1), 48 -> 16) 28x28
//   scores = conv 1x1(d1, 16 -> 11)        [N x 11 x 28 x 28]
std::shared_ptr<nn::Graph> unet_graph() {
  const auto pool = [] { return std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2); };
  const auto up = [] { return std::make_shared<nn::SpatialUpSamplingNearest>(2); };  // Note [U-Net upsampling]
  // channels are dimension 0 of a [C x H x W] image, 1 of a batch: JoinTable(0, 3) joins both
  const auto join = [] { return std::make_shared<nn::JoinTable>(0, 3); };
  nn::Node x = nn::Input();
  nn::Node e1 = conv_block(x, 1, 16);
  nn::Node e2 = conv_block(nn::call(pool(), e1), 16, 32);
  nn::Node b = conv_block(nn::call(pool(), e2), 32, 64);
  nn::Node d2 = conv_block(nn::call(join(), {nn::call(up(), b), e2}), 64 + 32, 32);
  nn::Node d1 = conv_block(nn::call(join(), {nn::call(up(), d2), e1}), 32 + 16, 16);
  nn::Node scores = nn::call(std::make_shared<nn::SpatialConvolution>(16, kClasses, 1, 1), d1);
  return std::make_shared<nn::Graph>(x, scores);
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Scores {
  double loss = 0;        // the mean cross entropy over the pixels
  double pixel = 0;       // pixels whose predicted class is the target
  double foreground = 0;  // the same, over the pixels whose target is not background
  double image = 0;       // images whose most predicted foreground class is theirs
};

// `net` (in evaluation mode) over a split, in batches of 500.
Scores evaluate(nn::Module& net, nn::Criterion& criterion, const Split& d, Device device) {
  net.evaluate();
  const int64_t n = d.images.size(0), batch = 500;
  Scores s;
  int64_t correct = 0, pixels = 0, fg_correct = 0, fg = 0, images_correct = 0;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t len = std::min(batch, n - start);
    const Tensor target = d.targets.narrow(0, start, len).to(device);
    const Tensor scores = net.forward(d.images.narrow(0, start, len).to(device));
    s.loss += criterion.forward(scores, target) * static_cast<double>(len);
    const std::vector<int64_t> predicted = scores.argmax(1).to_vector<int64_t>();
    const std::vector<int64_t> want = d.targets.narrow(0, start, len).to_vector<int64_t>();
    const std::vector<int64_t> labels = d.labels.narrow(0, start, len).to_vector<int64_t>();
    const int64_t per_image = static_cast<int64_t>(want.size()) / len;
    for (int64_t i = 0; i < len; ++i) {
      std::vector<int64_t> votes(kClasses, 0);
      for (int64_t p = i * per_image; p < (i + 1) * per_image; ++p) {
        const bool hit = predicted[p] == want[p];
        correct += hit;
        if (want[p] != 0) {
          ++fg;
          fg_correct += hit;
        }
        ++votes[predicted[p]];
      }
      const auto vote = std::max_element(votes.begin() + 1, votes.end()) - votes.begin();
      images_correct += votes[vote] > 0 && vote - 1 == labels[i];
    }
    pixels += static_cast<int64_t>(want.size());
  }
  s.loss /= static_cast<double>(std::max<int64_t>(n, 1));
  s.pixel = static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(pixels, 1));
  s.foreground = static_cast<double>(fg_correct) / static_cast<double>(std::max<int64_t>(fg, 1));
  s.image = static_cast<double>(images_correct) / static_cast<double>(std::max<int64_t>(n, 1));
  return s;
}

// Saves the model, loads it back (nn::load_model: on the CPU, as twins where it was converted)
// and compares its scores on up to 256 test images with the trained network's: the nn backend
// gives the same bits; cuDNN may pick other algorithms for the reloaded copy, so a difference
// within 1e-3 of the scores' size passes there.
void save_and_check(nn::Module& net, const Split& test, Device device, const std::string& path, bool exact) {
  nn::save_model(net, path);
  std::printf("saved %s.json and %s.safetensors\n", path.c_str(), path.c_str());
  const nn::ModulePtr loaded = nn::load_model(path);
  loaded->to(device);
  loaded->evaluate();
  net.evaluate();
  const int64_t len = std::min<int64_t>(256, test.images.size(0));
  const Tensor x = test.images.narrow(0, 0, len).to(device);
  const Tensor a = net.forward(x).to(Device::cpu()).clone();  // the next forward reuses its output
  const Tensor b = loaded->forward(x).to(Device::cpu());
  const double diff = a.sub(b).abs().max().item();
  const double size = std::max(1.0, a.abs().max().item());
  const bool same = a.argmax(1).eq(b.argmax(1)).to(DType::Float32).min().item() == 1.0;
  std::printf("reloaded %s: max |score difference| %.3g over %lld test images, same predictions: %s\n", path.c_str(),
              diff, static_cast<long long>(len), same ? "yes" : "no");
  if (exact ? diff != 0 : !(diff <= 1e-3 * size)) {
    throw std::runtime_error("the model loaded from " + path + " predicts differently from the trained one");
  }
}

int run(const Options& o) {
  tensor::manual_seed(o.seed);
  std::printf("Fashion-MNIST from %s\n", o.data.c_str());
  Split train = load_split(o, "train", o.limit);
  Split test = load_split(o, "t10k", o.test_limit);
  const double background = test.targets.eq(0.0).to(DType::Float32).mean().item();
  std::printf(
      "%lld training and %lld test images; targets: 0 below %.2g, else 1 + the class (%.1f %% of the test pixels are "
      "background)\n",
      static_cast<long long>(train.images.size(0)), static_cast<long long>(test.images.size(0)), o.threshold,
      100 * background);
  // the network sees the images standardised with the training set's statistics
  const double mean = train.images.mean().item();
  const double std = std::sqrt(train.images.sub(mean).square().mean().item());
  train.images.add_(-mean).mul_(1.0 / std);
  test.images.add_(-mean).mul_(1.0 / std);

  const std::shared_ptr<nn::Graph> graph = unet_graph();
  int64_t weights = 0;
  for (const Tensor& p : graph->parameters()) weights += p.numel();
  std::printf("U-Net: an nn.Graph of %zu modules, %lld parameters\n", graph->modules.size(),
              static_cast<long long>(weights));
  if (o.print_graph) std::printf("%s\n", graph->str().c_str());
  if (!o.dot.empty()) {
    std::ofstream out(o.dot);
    out << graph->dot();
    if (!out.flush()) throw std::runtime_error("cannot write " + o.dot);
    std::printf("wrote the graph to %s (dot -Tsvg %s > unet.svg)\n", o.dot.c_str(), o.dot.c_str());
  }

  nn::ModulePtr net = graph;
  nn::CriterionPtr criterion = std::make_shared<nn::SpatialCrossEntropyCriterion>();
  Device device = Device::cpu();
  if (o.backend == "cudnn") {
    device = Device::cuda(0);
    nn::ConvertReport report;
    net = nn::convert(net, cudnn::backend, {}, &report);
    criterion = nn::convert(criterion, cudnn::backend);
    std::printf("converted to cudnn: %s\n", report.str().c_str());
  }
  net->to(device);
  criterion->to(device);
  net->setGradInputNeeded(false);  // the images need no gradient
  nn::Adam optimizer(net->parameters(), net->gradParameters(), nn::Adam::Options{.lr = o.lr});
  nn::DataLoader loader(
      std::make_shared<nn::TensorDataset>(std::vector<Tensor>{train.images, train.targets}),
      nn::DataLoader::Options{.batchSize = o.batch, .shuffle = true, .seed = o.seed + 1, .device = device});
  const int64_t steps = loader.batchesPerEpoch();

  const auto start_all = Clock::now();
  Scores last;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    net->train();
    loader.setEpoch(epoch - 1);
    const auto start = Clock::now();
    double loss_sum = 0;
    int64_t seen = 0, step = 0;
    std::vector<Tensor> b;
    while (loader.next(b)) {
      net->zeroGradParameters();
      const Tensor& scores = net->forward(b[0]);
      const double loss = criterion->forward(scores, b[1]);
      net->backward(b[0], criterion->backward(scores, b[1]));
      optimizer.step();
      loss_sum += loss * static_cast<double>(b[0].size(0));
      seen += b[0].size(0);
      ++step;
      if (!o.quiet && (step == steps || step % std::max<int64_t>(1, steps / 10) == 0)) {
        std::printf("epoch %lld/%lld  batch %lld/%lld  loss %.4f  %.0f img/s\n", static_cast<long long>(epoch),
                    static_cast<long long>(o.epochs), static_cast<long long>(step), static_cast<long long>(steps),
                    loss_sum / static_cast<double>(seen), static_cast<double>(seen) / seconds_since(start));
        std::fflush(stdout);
      }
    }
    const double train_seconds = seconds_since(start);
    const auto start_test = Clock::now();
    last = evaluate(*net, *criterion, test, device);
    std::printf(
        "epoch %lld: train loss %.4f, test loss %.4f, pixel accuracy %.4f, foreground accuracy %.4f, image accuracy "
        "%.4f (training %.1f s, test %.1f s)\n",
        static_cast<long long>(epoch), loss_sum / static_cast<double>(std::max<int64_t>(seen, 1)), last.loss,
        last.pixel, last.foreground, last.image, train_seconds, seconds_since(start_test));
    std::fflush(stdout);
  }
  std::printf("test pixel accuracy %.4f, foreground accuracy %.4f after %lld epoch%s in %.1f s on %s\n", last.pixel,
              last.foreground, static_cast<long long>(o.epochs), o.epochs == 1 ? "" : "s", seconds_since(start_all),
              device.str().c_str());
  if (!o.save.empty()) save_and_check(*net, test, device, o.save, o.backend == "nn");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return samples::run_main("unet", argc, argv, parse, run); }
