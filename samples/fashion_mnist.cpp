// fashion_mnist: trains a 2-conv + pooling + batch-norm network (or, with --model lstm, a
// 2-layer LSTM reading each image's 28 rows as a sequence) on Fashion-MNIST, on the CPU
// (nn) or, with --backend cudnn, converted to cuDNN on the GPU; prints progress, test
// accuracy per class, and saves the trained model.
//
//   fashion_mnist [--data DIR] [--backend nn|cudnn] [--model conv|lstm] [--epochs N]
//                 [--batch-size N] [--lr X] [--lr-decay F] [--hidden N] [--seed N] [--limit N]
//                 [--gpus N] [--save PATH] [--quiet] [--optimizer sgd|adam|adamw]
//                 [--weight-decay X] [--lr-schedule exp|step|cosine|onecycle|plateau]
//                 [--warmup N] [--clip-grad N] [--amp float16|bfloat16] [--checkpoint DIR]
//                 [--resume DIR] [--log FILE] [--log-every N] [--data-on-gpu]
// Data parallel (a build with NCCL): --gpus N trains on N GPUs from one process
// (dist::DataParallelTable); under scripts/launch (or torchrun, mpirun) each process trains
// on its GPU and its shard of the data (dist::DistributedDataParallel). Either way the
// global batch is --batch-size, as on one GPU, so the accuracy is the same.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "nn/Adam.h"
#include "nn/AdamW.h"
#include "nn/ClipGrad.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Embedding.h"
#include "nn/GradScaler.h"
#include "nn/LRScheduler.h"
#include "nn/LSTM.h"
#include "nn/Linear.h"
#include "nn/MixedPrecision.h"
#include "nn/SGD.h"
#include "nn/Select.h"
#include "nn/Sequential.h"
#include "nn/View.h"
#include "samples/Args.h"
#include "samples/Networks.h"
#include "samples/VisionTransformer.h"
#include "tensor/Cuda.h"
#include "tensor/Denormals.h"
#include "train/Checkpoint.h"
#include "train/Data.h"
#include "train/Idx.h"
#include "train/TrainingLog.h"
#ifdef CUDNN_NN_HAVE_NCCL
#include "distributed/DataParallelTable.h"
#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "distributed/DistributedSampler.h"
#endif

using tensor::Device;
using tensor::DType;
using tensor::Tensor;

namespace {

struct Options {
  std::string data = nn::kFashionMnistDir;
  std::string backend = "nn";
  std::string model = "conv";
  int64_t epochs = 7;
  int64_t batch = 128;
  double lr = 2e-3;
  double lr_decay = 0.7;  // the learning rate is multiplied by this after each epoch
  int64_t hidden = 0;     // conv: the classifier's hidden units (256); lstm: the LSTM's (128)
  uint64_t seed = 1;
  int64_t limit = 0;  // train on the first N images only (0: all)
  std::string save = "fashion_mnist_model";
  bool quiet = false;
  int64_t gpus = 0;  // > 0: DataParallelTable over GPUs 0..gpus-1
  std::string optimizer = "adam";
  double weight_decay = -1;  // < 0: the optimizer's default (AdamW 0.01, others 0)
  std::string schedule = "exp";
  int64_t warmup = 100;      // cosine: warm-up steps
  double clip_grad = 0;      // > 0: clip the gradients' global 2-norm to this
  std::string amp;           // "float16" or "bfloat16": 16-bit compute, float32 master weights
  std::string checkpoint;    // a checkpoint per epoch in this directory
  std::string resume;        // resume from this directory's checkpoint
  std::string log;           // CSV (or .jsonl) per epoch
  bool data_on_gpu = false;  // the training set in GPU memory, gathered there (a measurement)
  int64_t log_every = 0;     // and every N steps
  bool flush_denormal = false;  // CPU: denormal floats flushed to zero (tensor/Denormals.h)
};

// A split of Fashion-MNIST: images float32 [N x 1 x 28 x 28], labels Int64 [N].
struct Split {
  Tensor images, labels;
};

// Started by scripts/launch, torchrun or mpirun: one process per GPU.
bool launched() { return std::getenv("WORLD_SIZE") || std::getenv("OMPI_COMM_WORLD_SIZE"); }

const char* kUsage =
    "usage: fashion_mnist [options]\n"
    "  --data DIR        Fashion-MNIST idx files (default /usr/share/datasets/fashion-mnist,\n"
    "                    from the Debian package dataset-fashion-mnist)\n"
    "  --backend B       nn (CPU, default) or cudnn (convert and train on the GPU)\n"
    "  --model M         conv (default: 2 convolutions, batch norm, pooling), lstm\n"
    "                    (a 2-layer LSTM over the image's 28 rows, classified from its last step)\n"
    "                    or vit (a Vision Transformer: 7x7 patches, 3 encoder layers)\n"
    "  --epochs N        passes over the training set (default 7)\n"
    "  --batch-size N    images per step (default 128)\n"
    "  --lr X            learning rate (default 0.002; onecycle: the peak)\n"
    "  --lr-decay F      multiply the learning rate by F after each epoch (default 0.7)\n"
    "  --hidden N        hidden units before the 10 scores (default 256; lstm: 128;\n"
    "                    vit: the token width, 64)\n"
    "  --seed N          initialisation and shuffling seed (default 1)\n"
    "  --limit N         train on the first N images only (default: all 60000)\n"
    "  --gpus N          train on N GPUs from this process (DataParallelTable; implies cudnn);\n"
    "                    under scripts/launch each process uses its own GPU instead\n"
    "  --save PATH       where the trained model goes: PATH.json + PATH.safetensors\n"
    "                    (default fashion_mnist_model; empty to skip)\n"
    "  --quiet           no progress lines\n"
    "  --optimizer O     adam (default), adamw (decoupled weight decay; biases and batch-norm\n"
    "                    parameters not decayed) or sgd (momentum 0.9, Nesterov)\n"
    "  --weight-decay X  weight decay (default 0; adamw 0.01)\n"
    "  --lr-schedule S   exp (default: times --lr-decay each epoch), step (times --lr-decay\n"
    "                    every 2 epochs), cosine (linear warm-up, then cosine to 0, per step),\n"
    "                    onecycle (per step, peak --lr) or plateau (times 0.5 when the test\n"
    "                    accuracy stops improving)\n"
    "  --warmup N        cosine: warm-up steps (default 100)\n"
    "  --clip-grad N     clip the gradients' global 2-norm to N (default: no clipping)\n"
    "  --amp T           float16 or bfloat16 compute with float32 master weights (cudnn);\n"
    "                    float16 with dynamic loss scaling\n"
    "  --checkpoint DIR  save a checkpoint (model, optimizer, schedule, scaler, generator,\n"
    "                    loader) after each epoch into DIR\n"
    "  --resume DIR      go on from DIR's checkpoint (the same options as the run that wrote it;\n"
    "                    a larger --epochs goes on to it: cosine and onecycle then span the new\n"
    "                    total, the lr from the saved step on that of a run of --epochs N)\n"
    "  --log FILE        a line per epoch (CSV, or JSON lines for .jsonl; its directory is\n"
    "                    created); scripts/plot_log.py draws it (python3-matplotlib)\n"
    "  --log-every N     and a line every N steps\n"
    "  --data-on-gpu     keep the training set in GPU memory and gather batches there (cudnn),\n"
    "                    instead of the loader's pinned, asynchronous copies: to compare epoch times\n"
    "  --flush-denormal  (CPU) flush denormal floats to zero, as torch.set_flush_denormal(True): later\n"
    "                    epochs stay as fast as the first (tensor/Denormals.h)\n";

namespace fs = std::filesystem;

// Fails now unless `dir` is a directory where `file` can be written or one that can be created
// (its nearest existing ancestor is a writable directory); creates nothing.
void creatable_dir(const samples::Args& args, const std::string& flag, const std::string& dir,
                   const std::string& file) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return args.writable(flag, file);
  fs::path p = dir;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  if (p.empty()) p = ".";
  if (!fs::is_directory(p, ec)) {
    args.fail(flag + ": cannot create the directory '" + dir + "': '" + p.string() + "' is not a directory");
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    args.fail(flag + ": cannot create the directory '" + dir + "': '" + p.string() + "': " + std::strerror(errno));
  }
}

// What the run reads and writes, before any of it: a bad --resume, --checkpoint, --log, --save
// or --data is a one-line error now, not after loading the data and building the network.
void check_paths(const samples::Args& args, const Options& o) {
  std::error_code ec;
  if (!o.resume.empty()) {
    const std::string file = nn::checkpoint_file(o.resume);
    if (!fs::is_regular_file(file, ec) || ::access(file.c_str(), R_OK) != 0) {
      const std::string why = fs::is_directory(file, ec) ? "a directory"
                              : fs::exists(file, ec)     ? std::strerror(errno)
                              : fs::is_directory(o.resume, ec)
                                  ? "no such file (not a checkpoint directory; --checkpoint DIR writes one)"
                                  : "no such directory";
      args.fail("--resume: cannot read the checkpoint '" + file + "': " + why);
    }
  }
  if (!o.checkpoint.empty()) creatable_dir(args, "--checkpoint", o.checkpoint, nn::checkpoint_file(o.checkpoint));
  if (!o.save.empty()) args.writable("--save", o.save);  // before the training, not after it
  if (!o.log.empty()) {
    if (fs::is_directory(o.log, ec))
      args.fail("--log: cannot write '" + o.log + "': it is a directory, expected a file");
    const fs::path parent = fs::path(o.log).parent_path();
    if (parent.empty() || fs::is_directory(parent, ec)) {
      args.writable("--log", o.log);
    } else {
      creatable_dir(args, "--log", parent.string(), o.log);  // nn::TrainingLog creates it
    }
  }
  const std::string images = o.data + "/train-images-idx3-ubyte";
  if (!fs::exists(images + ".gz", ec) && !fs::exists(images, ec)) {
    args.fail("--data: no Fashion-MNIST in '" + o.data + "' (" + images +
              "[.gz] not found): install the Debian package dataset-fashion-mnist (scripts/dev deps) or pass "
              "--data DIR with the four idx files");
  }
}

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .text("--data", o.data)
      .choice("--backend", o.backend, {"nn", "cudnn"})
      .choice("--model", o.model, {"conv", "lstm", "vit"})
      .integer("--epochs", o.epochs, 1, 1000)
      .integer("--batch-size", o.batch, 1, 65536)
      .number("--lr", o.lr, 1e-8, 10)
      .number("--lr-decay", o.lr_decay, 1e-3, 1)
      .integer("--hidden", o.hidden, 1, 65536)
      .integer("--seed", o.seed, 0, INT64_MAX)
      .integer("--limit", o.limit, 0, INT64_MAX)
      .text("--save", o.save)
      .set("--quiet", o.quiet)
      .integer("--gpus", o.gpus, 1, 64)
      .choice("--optimizer", o.optimizer, {"sgd", "adam", "adamw"})
      .number("--weight-decay", o.weight_decay, 0, 10)
      .choice("--lr-schedule", o.schedule, {"exp", "step", "cosine", "onecycle", "plateau"})
      .integer("--warmup", o.warmup, 0, INT64_MAX)
      .number("--clip-grad", o.clip_grad, 1e-12, 1e12)
      .choice("--amp", o.amp, {"float16", "bfloat16"})
      .text("--checkpoint", o.checkpoint)
      .text("--resume", o.resume)
      .text("--log", o.log)
      .integer("--log-every", o.log_every, 1, INT64_MAX)
      .set("--data-on-gpu", o.data_on_gpu)
      .set("--flush-denormal", o.flush_denormal)
      .parse(args);
  if (o.hidden == 0) o.hidden = o.model == "lstm" ? 128 : o.model == "vit" ? 64 : 256;
  if (o.gpus > 0 || launched()) o.backend = "cudnn";
  // the devices asked for, before any data is read: the real cause, at once
  const int visible = tensor::cuda::device_count();
#ifndef CUDNN_NN_HAVE_NCCL
  if (o.gpus > 0) args.fail("--gpus needs a build with NCCL (data parallel training), and this one has none");
#endif
  if (o.gpus > visible) {
    args.fail("--gpus " + std::to_string(o.gpus) + " needs " + std::to_string(o.gpus) + " CUDA device" +
              (o.gpus == 1 ? "" : "s") + ", and " +
              (visible == 0 ? "none is" : "only " + std::to_string(visible) + (visible == 1 ? " is" : " are")) +
              " visible");
  }
  if (o.backend == "cudnn" && visible == 0) {
    args.fail(launched() ? "a process started by a launcher trains on its own GPU, and no CUDA device is visible"
                         : "--backend cudnn needs a CUDA device, and none is visible (--backend nn trains on the CPU)");
  }
  if (o.data_on_gpu && (o.backend != "cudnn" || o.gpus > 0)) {
    args.fail("--data-on-gpu needs --backend cudnn on one GPU");
  }
  if (!o.amp.empty() && o.backend != "cudnn") {
    args.fail("--amp needs --backend cudnn (nn computes float32 and float64 on the CPU)");
  }
  check_paths(args, o);
  return o;
}

// conv 3x3 -> BN -> ReLU -> 2x2 max pool, twice; then `hidden` units, dropout, 10 scores.
std::shared_ptr<nn::Sequential> build_lstm_network(int64_t hidden) {
  auto net = std::make_shared<nn::Sequential>();
  auto rows = std::make_shared<nn::View>(28, 28);
  rows->setNumInputDims(3);  // [batch x 1 x 28 x 28] -> [batch x 28 x 28], a batch of one too
  net->add(rows);
  net->add(std::make_shared<nn::LSTM>(28, hidden, 2, /*batchFirst=*/true));
  net->add(std::make_shared<nn::Select>(1, -1));
  net->add(std::make_shared<nn::Linear>(hidden, 10));
  return net;
}

// --data-on-gpu: the training images as the [N x 784] table of an embedding lookup in GPU
// memory (nn::Embedding's cuDNN twin), a batch gathered there by one kernel from its indices,
// its labels from the host: the epoch time with no host-to-device image copy, to compare the
// DataLoader's with. The loader runs it on the consumer's thread (prefetch 0); a batch lives
// in the lookup's output until the next one, as the loader's do.
class GpuResidentDataset : public nn::Dataset {
 public:
  GpuResidentDataset(const Split& d, Device device) : labels_(d.labels), device_(device) {
    auto table = std::make_shared<nn::Embedding>(d.images.size(0), 28 * 28);
    table->weight.copy_(d.images.contiguous().view({d.images.size(0), 28 * 28}));
    lookup_ = nn::convert(std::shared_ptr<nn::Module>(table), cudnn::backend);
    lookup_->to(device);
    lookup_->evaluate();
  }
  int64_t size() const override { return labels_.size(0); }
  std::vector<Tensor> batch(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    Tensor idx = tensor::empty({n}, DType::Int64);
    std::copy(indices.begin(), indices.end(), idx.data<int64_t>());
    const Tensor images = lookup_->forward(idx.to(device_));
    return {images.view({n, 1, 28, 28}), tensor::index_select(labels_, 0, idx).to(device_)};
  }

 private:
  std::shared_ptr<nn::Module> lookup_;  // forward() is not const; the loader calls it from one thread
  Tensor labels_;
  Device device_;
};

std::string duration(double seconds) {
  const int s = static_cast<int>(std::lround(seconds));
  char buf[32];
  if (s >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ds", s);
  return buf;
}

// Normalises with the training set's statistics, in place.
void standardise(Tensor& images, double mean, double std) { images.add_(-mean).mul_(1.0 / std); }

// Accuracy of `net` (in evaluation mode) over a dataset, per class too.
double evaluate(nn::Module& net, const Split& d, int64_t batch, Device device, std::vector<double>& per_class,
                DType compute) {
  net.evaluate();
  const int64_t n = d.images.size(0);
  std::vector<int64_t> correct(10, 0), total(10, 0);
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t len = std::min(batch, n - start);
    const Tensor scores = net.forward(d.images.narrow(0, start, len).to(device, compute));
    const std::vector<int64_t> predicted = scores.argmax(1).to_vector<int64_t>();
    const std::vector<int64_t> labels = d.labels.narrow(0, start, len).to_vector<int64_t>();
    for (int64_t i = 0; i < len; ++i) {
      ++total[labels[i]];
      correct[labels[i]] += predicted[i] == labels[i];
    }
  }
  per_class.assign(10, 0);
  for (int c = 0; c < 10; ++c) per_class[c] = total[c] ? double(correct[c]) / total[c] : 0;
  return double(std::accumulate(correct.begin(), correct.end(), int64_t(0))) / double(n);
}

using Clock = std::chrono::steady_clock;

// This process's place among the data-parallel processes: the only one, or its rank under a
// launcher (NCCL builds). Only the lead (rank 0) prints, evaluates and saves.
struct Place {
  int rank = 0, world = 1;
  bool lead() const { return rank == 0; }
};

Place join(const Options& o) {
  Place p;
#ifdef CUDNN_NN_HAVE_NCCL
  if (launched()) {
    auto group = dist::init();
    p.rank = group->rank();
    p.world = group->worldSize();
    if (o.gpus > 0) throw std::runtime_error("--gpus is for one process; under a launcher each process has one GPU");
  }
#else
  if (o.gpus > 0 || launched()) {
    throw std::runtime_error("data parallel training (--gpus, scripts/launch) needs a build with NCCL");
  }
#endif
  if (!p.lead() && !std::freopen("/dev/null", "w", stdout)) {
    throw std::runtime_error(std::string("cannot send rank ") + std::to_string(p.rank) + "'s output to /dev/null");
  }
  return p;
}

// The training set (its first --limit images) and the test set, both normalised with the
// training set's statistics.
struct Data {
  Split train, test;
};

// One split of Fashion-MNIST (train/Idx.h), 28 x 28 images of 10 classes.
Split load_split(const std::string& dir, const std::string& split) {
  const auto d = nn::load_mnist(dir, split, 10);
  Split s{d->tensors()[0], d->tensors()[1]};
  if (s.images.size(2) != 28 || s.images.size(3) != 28) {
    throw std::runtime_error("Fashion-MNIST: expected 28 x 28 images in " + dir + " (" + split + "), got " +
                             s.images.description());
  }
  return s;
}

Data load_data(const Options& o) {
  std::printf("Fashion-MNIST from %s\n", o.data.c_str());
  Data d{load_split(o.data, "train"), load_split(o.data, "t10k")};
  if (o.limit > 0 && o.limit < d.train.images.size(0)) {
    d.train.images = d.train.images.narrow(0, 0, o.limit).clone();
    d.train.labels = d.train.labels.narrow(0, 0, o.limit).clone();
  }
  const double mean = d.train.images.mean().item();
  const double std = std::sqrt(d.train.images.sub(mean).square().mean().item());
  standardise(d.train.images, mean, std);
  standardise(d.test.images, mean, std);
  return d;
}

struct Network {
  std::shared_ptr<nn::Module> net;    // evaluated and saved
  std::shared_ptr<nn::Module> model;  // what trains: the network, or a data-parallel wrapper of it
  nn::CriterionPtr criterion;
  Device device = Device::cpu();
  int64_t batch = 0;  // per step of this process
};

// The --model network and its loss, converted to cuDNN for --backend cudnn, on their device.
Network build_network(const Options& o, int world) {
  samples::register_vit_types();  // its class-token embedding: a model-file type and a twin pair
  Network w;
  w.net = o.model == "lstm"  ? build_lstm_network(o.hidden)
          : o.model == "vit" ? samples::vision_transformer(o.hidden)
                             : samples::fashion_mnist_network(o.hidden);
  w.criterion = std::make_shared<nn::CrossEntropyCriterion>();
  if (o.backend == "cudnn") {
    if (!tensor::cuda::is_available()) {
      throw std::runtime_error("--backend cudnn needs a CUDA device, and none is visible");
    }
    w.device = Device::cuda(world > 1 ? tensor::cuda::current_device() : 0);
    nn::ConvertReport report;
    w.net = nn::convert(w.net, cudnn::backend, {}, &report);
    w.criterion = nn::convert(w.criterion, cudnn::backend);
    std::printf("converted to cudnn: %s\n", report.str().c_str());
  }
  w.net->to(w.device);
  // the images need no gradient: no backward-data pass for the first layer
  w.net->setGradInputNeeded(false);
  w.model = w.net;
  w.batch = o.batch;
#ifdef CUDNN_NN_HAVE_NCCL
  if (o.gpus > 0) {
    std::vector<int> gpus;
    for (int g = 0; g < o.gpus; ++g) gpus.push_back(g);
    w.model = std::make_shared<dist::DataParallelTable>(w.net, gpus);
  } else if (launched()) {
    w.model = std::make_shared<dist::DistributedDataParallel>(w.net);
    w.batch = (o.batch + world - 1) / world;  // the global batch stays --batch-size
  }
#endif
  if (world > 1)
    std::printf("data parallel: %d processes, %lld images per process and step\n", world,
                static_cast<long long>(w.batch));
  std::printf("%s\n", w.model->str().c_str());
  return w;
}

std::unique_ptr<nn::Optimizer> make_optimizer(const Options& o, const nn::MasterWeights& master) {
  const double wd = o.weight_decay >= 0 ? o.weight_decay : o.optimizer == "adamw" ? 1e-2 : 0.0;
  if (o.optimizer == "adamw") {
    return std::make_unique<nn::AdamW>(master.groups(), nn::AdamW::Options{.lr = o.lr, .weightDecay = wd});
  } else if (o.optimizer == "sgd") {
    return std::make_unique<nn::SGD>(
        master.params(), master.grads(),
        nn::SGD::Options{.lr = o.lr, .momentum = 0.9, .weightDecay = wd, .nesterov = true});
  }
  return std::make_unique<nn::Adam>(master.params(), master.grads(), nn::Adam::Options{.lr = o.lr, .weightDecay = wd});
}

// the data: this process's share of the training set, reshuffled every epoch
std::unique_ptr<nn::DataLoader> make_loader(const Options& o, const Split& train, Device device, int64_t batch,
                                            Place p) {
  std::shared_ptr<nn::Sampler> shard;
#ifdef CUDNN_NN_HAVE_NCCL
  if (launched() && o.gpus == 0)  // each process its shard (a DistributedSampler is an nn::Sampler)
    shard = std::make_shared<dist::DistributedSampler>(train.images.size(0), p.world, p.rank, true, o.seed + 1);
#else
  (void)p;
#endif
  // the same order of batches either way; on the GPU they come by pinned, asynchronous copies
  // (Note [Asynchronous batches] in train/Data.h) unless --data-on-gpu gathers them there
  std::shared_ptr<nn::Dataset> dataset;
  if (o.data_on_gpu)
    dataset = std::make_shared<GpuResidentDataset>(train, device);
  else
    dataset = std::make_shared<nn::TensorDataset>(std::vector<Tensor>{train.images, train.labels});
  return std::make_unique<nn::DataLoader>(
      dataset,
      nn::DataLoader::Options{
          .batchSize = batch, .shuffle = true, .seed = o.seed + 1, .prefetch = o.data_on_gpu ? 0 : 2, .device = device},
      shard);
}

struct Schedules {
  std::unique_ptr<nn::LRScheduler> schedule;  // per epoch, or per step for cosine and onecycle
  std::unique_ptr<nn::ReduceLROnPlateau> plateau;
  bool per_step = false;
};

// Note [Resumed schedules]: the schedules counted in steps (cosine, onecycle) span this run's
// --epochs, whatever the run that wrote a --resume checkpoint planned: they are built over
// steps * --epochs and the checkpoint restores only their position (the saved step), so the lr
// from there on is the one an uninterrupted run of --epochs N has at each step. A run resumed
// with the --epochs it was started with goes on exactly; one resumed with a larger --epochs
// (more training after a finished run) moves to the longer schedule at the saved step: the lr
// of a finished cosine, 0, rises to the longer cosine's value there, then anneals to 0 at the
// new end (a warm restart, printed at the start). The per-epoch schedules (exp, step, plateau)
// have no end and simply go on.
Schedules make_schedules(const Options& o, nn::Optimizer& optimizer, int64_t steps) {
  Schedules s;
  s.per_step = o.schedule == "cosine" || o.schedule == "onecycle";
  if (o.schedule == "exp") s.schedule = std::make_unique<nn::StepLR>(optimizer, 1, o.lr_decay);
  if (o.schedule == "step") s.schedule = std::make_unique<nn::StepLR>(optimizer, 2, o.lr_decay);
  if (o.schedule == "cosine") {
    s.schedule =
        std::make_unique<nn::WarmupCosineLR>(optimizer, std::min(o.warmup, steps * o.epochs - 1), steps * o.epochs);
  }
  if (o.schedule == "onecycle") s.schedule = std::make_unique<nn::OneCycleLR>(optimizer, o.lr, steps * o.epochs);
  if (o.schedule == "plateau") {
    s.plateau = std::make_unique<nn::ReduceLROnPlateau>(
        optimizer, nn::ReduceLROnPlateau::Options{.maximize = true, .factor = 0.5, .patience = 0});
  }
  return s;
}

struct EpochStats {
  double running_loss = 0;  // the sum of the batches' mean losses times their sizes
  int64_t seen = 0;         // images
  double seconds = 0;
};

// The epoch loop's state, borrowed from run().
struct Trainer {
  const Options& o;
  const Network& w;
  const Split& test;
  nn::MasterWeights& master;
  nn::Optimizer& optimizer;
  nn::GradScaler& scaler;
  nn::DataLoader& loader;
  const Schedules& s;
  nn::TrainingState& state;
  nn::TrainingLog* log;
  DType compute;
  bool lead;
  int64_t steps;  // batches per epoch
  int64_t n;      // this process's images per epoch
  bool tty;

  // One training step on batch b; returns its loss.
  double step(const std::vector<Tensor>& b) {
    const Tensor x = compute == DType::Float32 ? b[0] : b[0].to(compute);
    const Tensor& y = b[1];
    w.model->zeroGradParameters();
    // the loss in float32 (as autocast computes losses); its gradient back in the network's dtype
    const Tensor scores = w.model->forward(x).to(DType::Float32);
    const double loss = w.criterion->forward(scores, y);
    const Tensor& gy = w.criterion->backward(scores, y);
    w.model->backward(x, compute == DType::Float32 ? gy : scaler.scaleGrad(gy).to(compute));
    master.gradsToMaster();
    scaler.unscale(master.grads());
    if (o.clip_grad > 0) nn::clipGradNorm(master.grads(), o.clip_grad);
    if (scaler.step(optimizer)) master.paramsToModel();
    scaler.update();
    if (s.schedule && s.per_step) s.schedule->step();
    ++state.step;
    return loss;
  }

  void progress(int64_t epoch, int64_t step, const EpochStats& e, double elapsed) const {
    const bool report = !o.quiet && (tty || step + 1 == steps || (step + 1) % std::max<int64_t>(1, steps / 10) == 0);
    if (!report) return;
    const double rate = e.seen / std::max(elapsed, 1e-9);
    std::printf("%sepoch %lld/%lld  batch %lld/%lld  loss %.4f  %.0f img/s  ETA %s%s", tty ? "\r" : "",
                static_cast<long long>(epoch), static_cast<long long>(o.epochs), static_cast<long long>(step + 1),
                static_cast<long long>(steps), e.running_loss / e.seen, rate,
                duration((n - e.seen) / rate + (o.epochs - epoch) * n / rate).c_str(), tty ? "   " : "\n");
    std::fflush(stdout);
  }

  EpochStats train_epoch(int64_t epoch) {
    w.model->train();
    if (loader.epoch() != epoch - 1 || loader.position() >= steps) loader.setEpoch(epoch - 1);
    EpochStats e;
    const auto start = Clock::now();
    std::vector<Tensor> b;
    for (int64_t i = loader.position(); loader.next(b); ++i) {
      const int64_t len = b[1].size(0);
      const double loss = step(b);
      e.running_loss += loss * len;
      e.seen += len;
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (log) {
        log->maybeWriteStep({.kind = "step",
                             .epoch = epoch,
                             .step = state.step,
                             .loss = loss,
                             .lr = optimizer.groupLr(0),
                             .lossScale = scaler.scale(),
                             .imagesPerSecond = e.seen / std::max(elapsed, 1e-9)},
                            o.log_every);
      }
      progress(epoch, i, e, elapsed);
    }
    if (tty && !o.quiet) std::printf("\n");
    e.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return e;
  }

  // The test accuracy, the log line, the schedules' epoch step and the checkpoint; after the
  // last epoch the accuracy per class.
  void end_epoch(int64_t epoch, const EpochStats& e, Clock::time_point start_all) {
    std::vector<double> per_class;
    const double acc =
        lead ? evaluate(*w.net, test, 1000, w.device, per_class, compute) : 0;  // the replicas are identical
    std::printf(
        "epoch %lld: train loss %.4f, test accuracy %.4f, lr %.3g%s (%s)\n", static_cast<long long>(epoch),
        e.running_loss / std::max<int64_t>(e.seen, 1), acc, optimizer.groupLr(0),
        scaler.enabled() ? (", loss scale " + std::to_string(static_cast<int64_t>(scaler.scale()))).c_str() : "",
        duration(e.seconds).c_str());
    // the training alone, to the millisecond: what an epoch-time comparison wants
    std::printf("epoch %lld time %.3f s (%s)\n", static_cast<long long>(epoch), e.seconds,
                !w.device.is_cuda() ? "training steps, CPU"
                : o.data_on_gpu     ? "data on the GPU"
                                    : "DataLoader, pinned asynchronous copies");
    if (log) {
      log->write({.epoch = epoch,
                  .step = state.step,
                  .loss = e.running_loss / std::max<int64_t>(e.seen, 1),
                  .accuracy = acc,
                  .lr = optimizer.groupLr(0),
                  .lossScale = scaler.scale(),
                  .imagesPerSecond = e.seen / std::max(e.seconds, 1e-9)});
    }
    if (s.schedule && !s.per_step) s.schedule->step();
    if (s.plateau) s.plateau->step(acc);
    state.epoch = epoch;
    if (!o.checkpoint.empty() && lead) {
      nn::save_checkpoint(o.checkpoint, state);
      std::printf("checkpoint %s\n", nn::checkpoint_file(o.checkpoint).c_str());
    }
    if (epoch == o.epochs) {
      for (int c = 0; c < 10; ++c) std::printf("  %-12s %.3f\n", nn::kFashionMnistClasses[c], per_class[c]);
      std::printf("test accuracy %.4f after %lld epoch%s in %s on %s\n", acc, static_cast<long long>(o.epochs),
                  o.epochs == 1 ? "" : "s",
                  duration(std::chrono::duration<double>(Clock::now() - start_all).count()).c_str(),
                  w.device.str().c_str());
    }
  }
};

int run(const Options& o) {
  if (o.flush_denormal && !tensor::set_flush_denormal(true)) {
    std::fprintf(stderr, "fashion_mnist: --flush-denormal: this CPU has no flush-to-zero mode; ignored\n");
  }
  tensor::manual_seed(o.seed);
  const Place p = join(o);
  Data data = load_data(o);
  const Network w = build_network(o, p.world);
  // 16-bit compute (--amp): the network in float16/bfloat16 (batch norm keeps float32), the
  // optimizer over float32 master weights (nn/MixedPrecision.h), float16 with loss scaling
  const DType compute = o.amp == "float16" ? DType::Float16 : o.amp == "bfloat16" ? DType::BFloat16 : DType::Float32;
  if (compute != DType::Float32) w.net->to(compute);
  nn::MasterWeights master(*w.model);
  const std::unique_ptr<nn::Optimizer> optimizer = make_optimizer(o, master);
  nn::GradScaler scaler({.enabled = compute == DType::Float16});
  const std::unique_ptr<nn::DataLoader> loader = make_loader(o, data.train, w.device, w.batch, p);
  const int64_t steps = loader->batchesPerEpoch();
  const Schedules s = make_schedules(o, *optimizer, steps);
  nn::TrainingState state{
      w.model.get(), optimizer.get(), s.schedule.get(), s.plateau.get(), &scaler, loader.get(), 0, 0, p.world};
  if (!o.resume.empty()) {
    nn::load_checkpoint(o.resume, state);
    std::printf("resumed from %s: epoch %lld, step %lld\n", nn::checkpoint_file(o.resume).c_str(),
                static_cast<long long>(state.epoch), static_cast<long long>(state.step));
    // Note [Resumed schedules]
    if (s.per_step) {
      std::printf(
          "the %s schedule spans --epochs %lld (%lld steps), as if planned so from the start: lr %.3g at step %lld\n",
          o.schedule.c_str(), static_cast<long long>(o.epochs), static_cast<long long>(steps * o.epochs),
          optimizer->groupLr(0), static_cast<long long>(state.step));
    }
    if (state.epoch >= o.epochs) {
      std::printf("nothing to train: the checkpoint is at epoch %lld of --epochs %lld\n",
                  static_cast<long long>(state.epoch), static_cast<long long>(o.epochs));
    }
  }
  std::unique_ptr<nn::TrainingLog> log;
  if (!o.log.empty() && p.lead()) log = std::make_unique<nn::TrainingLog>(o.log, !o.resume.empty());

  const int64_t n = loader->batchesPerEpoch() > 0 ? static_cast<int64_t>(loader->sampler().indices(0).size()) : 0;
  Trainer t{o,       w,        data.test, master, *optimizer,
            scaler,  *loader,  s,         state,  log.get(),
            compute, p.lead(), steps,     n,      static_cast<bool>(isatty(fileno(stdout)))};
  const auto start_all = Clock::now();
  for (int64_t epoch = state.epoch + 1; epoch <= o.epochs; ++epoch) t.end_epoch(epoch, t.train_epoch(epoch), start_all);
  if (!o.save.empty() && p.lead()) {
    nn::save_model(*w.net, o.save);  // the network itself: one replica
    std::printf("saved %s.json and %s.safetensors\n", o.save.c_str(), o.save.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return samples::run_main("fashion_mnist", argc, argv, parse, run); }
