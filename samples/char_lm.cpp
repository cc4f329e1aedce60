// char_lm: a character-level language model: a decoder-only Transformer (Embedding, causal
// pre-norm nn::TransformerEncoderLayers, LayerNorm, Linear head) trained on a text file with
// Adam; prints the held-out text's bits per character as it trains, then a generated sample.
// There is no position embedding: causal attention tells positions apart by itself (Haviv et
// al. 2022, "Transformer language models without positional encodings still learn positional
// information"), which keeps the network made of library modules only.
//
//   char_lm [--data FILE] [--backend nn|cudnn] [--steps N] [--context N] [--dim N] [--layers N]
//           [--heads N] [--batch-size N] [--lr X] [--seed N] [--generate N] [--temperature T]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "nn/Adam.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Embedding.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "nn/TransformerEncoderLayer.h"
#include "nn/View.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"

using tensor::Device;
using tensor::DType;
using tensor::Tensor;

namespace {

struct Options {
  std::string data = "/usr/share/common-licenses/GPL-3";  // Debian's base-files: always there
  std::string backend = "nn";
  int64_t steps = 600, context = 64, dim = 64, layers = 2, heads = 4, batch = 32, generate = 300;
  double lr = 3e-3, temperature = 0.8;
  uint64_t seed = 1;
};

const char* kUsage =
    "usage: char_lm [options]\n"
    "  --data FILE       training text (default /usr/share/common-licenses/GPL-3, from base-files);\n"
    "                    the last 10 % is held out\n"
    "  --backend B       nn (CPU, default) or cudnn (convert the network and train on the GPU)\n"
    "  --steps N         Adam steps (default 600)\n"
    "  --context N       characters per training window (default 64)\n"
    "  --dim N           model width (default 64)\n"
    "  --layers N        causal encoder layers (default 2)\n"
    "  --heads N         attention heads (default 4)\n"
    "  --batch-size N    windows per step (default 32)\n"
    "  --lr X            Adam learning rate (default 0.003)\n"
    "  --seed N          initialisation, sampling and generation seed (default 1)\n"
    "  --generate N      characters to generate at the end (default 300)\n"
    "  --temperature T   sampling temperature (default 0.8)\n";

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .text("--data", o.data)
      .choice("--backend", o.backend, {"nn", "cudnn"})
      .integer("--steps", o.steps, 1, 10000000)
      .integer("--context", o.context, 2, 4096)
      .integer("--dim", o.dim, 1, 8192)
      .integer("--layers", o.layers, 1, 64)
      .integer("--heads", o.heads, 1, 64)
      .integer("--batch-size", o.batch, 1, 65536)
      .number("--lr", o.lr, 1e-8, 10)
      .integer("--seed", o.seed, 0, INT64_MAX)
      .integer("--generate", o.generate, 0, 1000000)
      .number("--temperature", o.temperature, 1e-3, 100)
      .parse(args);
  if (o.dim % o.heads != 0) args.fail("--dim must be divisible by --heads");
  return o;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<nn::Sequential> language_model(int64_t vocab, const Options& o) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Embedding>(vocab, o.dim));  // [B x T] -> [B x T x dim]
  for (int64_t l = 0; l < o.layers; ++l) {
    auto layer = std::make_shared<nn::TransformerEncoderLayer>(o.dim, o.heads, 4 * o.dim, 0.0, "gelu",
                                                               /*batchFirst=*/true, /*normFirst=*/true);
    layer->setCausal(true);
    net->add(layer);
  }
  net->add(std::make_shared<nn::View>(-1, o.dim));  // every position's features: [B T x dim]
  net->add(std::make_shared<nn::LayerNorm>(tensor::Shape{o.dim}));
  net->add(std::make_shared<nn::Linear>(o.dim, vocab));
  return net;
}

// Mean cross-entropy in bits per character over the held-out text, in windows of `context`.
double bits_per_char(nn::Module& net, nn::Criterion& criterion, const std::vector<int64_t>& ids, int64_t begin,
                     int64_t end, int64_t context, Device device, int64_t maxWindows) {
  net.evaluate();
  double nats = 0;
  int64_t count = 0;
  for (int64_t w = 0; begin + context < end && w < maxWindows; ++w, begin += context) {
    std::vector<int64_t> x(ids.begin() + begin, ids.begin() + begin + context);
    std::vector<int64_t> y(ids.begin() + begin + 1, ids.begin() + begin + context + 1);
    const Tensor xs = tensor::from_vector(x, {1, context}).to(device);
    const Tensor ys = tensor::from_vector(y, {context}).to(device);
    nats += criterion.forward(net.forward(xs), ys) * context;
    count += context;
  }
  net.train();
  return nats / std::max<int64_t>(count, 1) / std::log(2.0);
}

// The text as ids into its vocabulary (the bytes it uses, in byte order), and its split.
struct Corpus {
  std::vector<int64_t> ids;
  std::vector<char> chars;  // id -> byte
  int64_t n = 0, split = 0, vocab = 0;
};

Corpus encode(const std::string& text) {
  Corpus c;
  // the vocabulary: the bytes the text uses
  std::vector<int64_t> index(256, -1);
  for (unsigned char ch : text) {
    if (index[ch] < 0) {
      index[ch] = 0;
      c.chars.push_back(static_cast<char>(ch));
    }
  }
  std::sort(c.chars.begin(), c.chars.end(), [](char a, char b) { return (unsigned char)a < (unsigned char)b; });
  for (size_t i = 0; i < c.chars.size(); ++i) index[(unsigned char)c.chars[i]] = static_cast<int64_t>(i);
  c.ids.reserve(text.size());
  for (unsigned char ch : text) c.ids.push_back(index[ch]);
  c.n = static_cast<int64_t>(c.ids.size());
  c.split = c.n - c.n / 10;
  c.vocab = static_cast<int64_t>(c.chars.size());
  return c;
}

// Adam steps on random windows of the training text, the held-out loss every tenth of them.
void train(nn::Module& net, nn::Criterion& criterion, const Corpus& c, const Options& o, Device device,
           tensor::Generator& gen) {
  nn::Adam optimizer(net, o.lr);
  const auto start = std::chrono::steady_clock::now();
  double running = 0;
  const int64_t T = o.context, every = std::max<int64_t>(1, o.steps / 10);
  for (int64_t step = 1; step <= o.steps; ++step) {
    std::vector<int64_t> x, y;
    for (int64_t b = 0; b < o.batch; ++b) {
      const int64_t at = gen.randint(c.split - T - 1);
      x.insert(x.end(), c.ids.begin() + at, c.ids.begin() + at + T);
      y.insert(y.end(), c.ids.begin() + at + 1, c.ids.begin() + at + T + 1);
    }
    const Tensor xs = tensor::from_vector(x, {o.batch, T}).to(device);
    const Tensor ys = tensor::from_vector(y, {o.batch * T}).to(device);
    optimizer.zeroGrad();
    const Tensor& scores = net.forward(xs);
    running += criterion.forward(scores, ys);
    net.backward(xs, criterion.backward(scores, ys));
    optimizer.step();
    if (step % every == 0 || step == o.steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double heldOut = bits_per_char(net, criterion, c.ids, c.split, c.n, T, device, 64);
      std::printf("step %lld/%lld  train %.3f bits/char  held-out %.3f bits/char  (%.0fs)\n",
                  static_cast<long long>(step), static_cast<long long>(o.steps), running / every / std::log(2.0),
                  heldOut, secs);
      std::fflush(stdout);
      running = 0;
    }
  }
}

// One id drawn from the scores' softmax at `temperature`.
int64_t sample(const Tensor& last, double temperature, int64_t vocab, tensor::Generator& gen) {
  std::vector<double> p = last.mul(1 / temperature).to_vector<double>();
  const double m = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - m));
  double u = tensor::uniform({1}, 0, sum, gen, DType::Float64).item();
  int64_t next = vocab - 1;
  for (int64_t c = 0; c < vocab; ++c) {
    if ((u -= p[c]) <= 0) {
      next = c;
      break;
    }
  }
  return next;
}

// generation: the held-out text's first characters as the prompt, then sampling
void generate(nn::Module& net, const Corpus& c, const Options& o, Device device, tensor::Generator& gen) {
  const int64_t T = o.context;
  net.evaluate();
  std::vector<int64_t> seq(c.ids.begin() + c.split, c.ids.begin() + c.split + std::min<int64_t>(T / 2, 16));
  std::string out;
  for (int64_t id : seq) out += c.chars[id];
  const std::string prompt = out;
  for (int64_t i = 0; i < o.generate; ++i) {
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(seq.size()), T);
    std::vector<int64_t> window(seq.end() - len, seq.end());
    const Tensor scores = net.forward(tensor::from_vector(window, {1, len}).to(device)).cpu().to(DType::Float64);
    const int64_t next = sample(scores.select(0, len - 1), o.temperature, c.vocab, gen);
    seq.push_back(next);
    out += c.chars[next];
  }
  std::printf("sample (prompt \"%s\", temperature %.2f):\n%s\n", prompt.c_str(), o.temperature, out.c_str());
}

int run(const Options& o) {
  tensor::manual_seed(o.seed);
  const std::string text = read_text(o.data);
  if (static_cast<int64_t>(text.size()) < 4 * (o.context + 1)) {
    throw std::runtime_error(o.data + " is too short for --context " + std::to_string(o.context));
  }
  const Corpus c = encode(text);
  std::printf("%s: %lld characters, %lld distinct; training on the first %lld, holding out %lld\n", o.data.c_str(),
              static_cast<long long>(c.n), static_cast<long long>(c.vocab), static_cast<long long>(c.split),
              static_cast<long long>(c.n - c.split));

  std::shared_ptr<nn::Module> net = language_model(c.vocab, o);
  nn::CriterionPtr criterion = std::make_shared<nn::CrossEntropyCriterion>();
  Device device = Device::cpu();
  if (o.backend == "cudnn") {
    if (!tensor::cuda::is_available()) throw std::runtime_error("--backend cudnn needs a CUDA device");
    device = Device::cuda(0);
    nn::ConvertReport report;
    net = nn::convert(net, cudnn::backend, {}, &report);
    criterion = nn::convert(criterion, cudnn::backend);
    std::printf("converted to cudnn: %s\n", report.str().c_str());
  }
  net->to(device);
  std::printf("%s\n", net->str().c_str());

  tensor::Generator gen(o.seed + 1);
  train(*net, *criterion, c, o, device, gen);
  const double bpc = bits_per_char(*net, *criterion, c.ids, c.split, c.n, o.context, device, INT64_MAX);
  std::printf("held-out text: %.3f bits per character\n", bpc);
  generate(*net, c, o, device, gen);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return samples::run_main("char_lm", argc, argv, parse, run); }
