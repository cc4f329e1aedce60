// rnn.cpp: RNNBlock on cudnnRNNForward / cudnnRNNBackwardData_v8 / cudnnRNNBackwardWeights_v8.
#include "cudnn/ops/rnn.h"

#include <cstdio>
#include <utility>

#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/core/RNNDescriptors.h"
#include "nn/Buffers.h"
#include "tensor/Cuda.h"
#include "tensor/EnumTable.h"
#include "tensor/LruCache.h"

namespace cudnn {

// Note [RNN plans]
// Everything cuDNN needs for one shape is an Entry: the RNN descriptor (algorithm, math,
// padded I/O flag), the x and y data descriptors with their host lengths and the device copy
// cuDNN reads asynchronously (devSeqLengths), the state descriptor, and the work/reserve
// sizes. Entries are cached per Key (input size, T, B, layout, variable lengths or not, mode,
// math, algorithm asked for); a Key whose lengths change only re-sets its data descriptors
// and lengths (host calls and a 4*B byte copy), so steady state creates nothing. The cache is
// bounded as the convolutions' plan cache is, by the flag conv.cache_limit, least recently used
// entries first (Note [One plan cache] in conv_search.cpp). Workspace comes from the caching
// allocator per call; the reserve space is kept from a training forward to its backward.
// Layouts: sequence-major batches of full length use the packed layout with padded I/O off
// (the one the persistent kernels take); batch-first or variable lengths use the unpacked
// layouts with CUDNN_RNN_PADDED_IO_ENABLED, y padded with zeros past each sequence's end.
// The weight layout is cuDNN's (cudnnGetRNNWeightParams), computed once per input size with a
// standard-algorithm descriptor; every compute descriptor must report the same weight-space
// size (checked), as PyTorch also relies on.
//
// Note [Persistent RNN kernels]
// CUDNN_RNN_ALGO_PERSIST_STATIC keeps the recurrent weights on chip for the whole sequence.
// It is asked for only when set_persist(true), the data are not float64, and all sequences
// have full length (cuDNN's persistent kernels take no variable lengths). cuDNN decides the
// rest (sizes, layers, device): a refusal (NOT_SUPPORTED or BAD_PARAM) from the descriptor,
// the size query or the first forward makes that shape use the standard algorithm, said once
// per block in verbose mode.

namespace {

constexpr std::pair<nn::RNNMode, cudnnRNNMode_t> kCellModes[] = {
    {nn::RNNMode::ReLU, CUDNN_RNN_RELU},
    {nn::RNNMode::Tanh, CUDNN_RNN_TANH},
    {nn::RNNMode::LSTM, CUDNN_LSTM},
    {nn::RNNMode::GRU, CUDNN_GRU},
};

cudnnRNNMode_t cell_mode(nn::RNNMode m) { return tensor::lookup(kCellModes, m).value_or(CUDNN_LSTM); }

// float32 math for float16/bfloat16 data (cuDNN's mathPrec), as the convolutions
cudnnDataType_t math_precision(DType d) { return d == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

// Note [float32 RNN math]
// float32 RNNs follow allow_tf32, as PyTorch's do: allowed (the default), cuDNN's tensor cores
// take the GEMMs with their inputs rounded to TF32 (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
// not allowed, exact float32 FMA math. CUDNN_DEFAULT_MATH, which also lets cuDNN use TF32, picks
// slower kernels. Measured on the H100 (cuDNN 9.14, 2-layer LSTM, hidden 512, sequence 50,
// batch 64, convnet_benchmark --nets lstm --step --graph, docs/performance.md): the graphed
// training step 1.27 ms with ALLOW_CONVERSION, 2.20 with DEFAULT, 3.82 with FMA; PyTorch 2.26 ms
// with TF32 allowed, 3.85 without. 16-bit data uses tensor cores with float32 accumulation.
cudnnMathType_t math_type(DType d) {
  switch (d) {
    case DType::Float32:
      return config().allow_tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH;
    case DType::Float16:
    case DType::BFloat16:
      return CUDNN_TENSOR_OP_MATH;
    default:
      return CUDNN_DEFAULT_MATH;
  }
}

bool refusal(cudnnStatus_t st) {
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM;
}

void check(cudnnStatus_t st, const char* call, int line) {
  if (st != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(st, call, __FILE__, line);
}

void say(const std::string& line) {
  if (config().verbose) std::fprintf(stderr, "cudnn-nn: %s\n", line.c_str());
}

struct Key {
  int64_t inputDim = 0, seq = 0, batch = 0;
  bool batchFirst = false, varlen = false, training = true, persist = false;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<int64_t>()(k.inputDim);
    for (int64_t v : {k.seq, k.batch, static_cast<int64_t>(k.math),
                      static_cast<int64_t>(k.batchFirst | k.varlen << 1 | k.training << 2 | k.persist << 3)}) {
      h = h * 1099511628211ull ^ std::hash<int64_t>()(v);
    }
    return h;
  }
};

std::string key_str(const Key& k) {
  return "input " + std::to_string(k.inputDim) + ", T " + std::to_string(k.seq) + ", batch " + std::to_string(k.batch);
}

Tensor empty_bytes(size_t n, const Tensor& like) {
  return tensor::empty({static_cast<int64_t>(n > 0 ? n : 1)}, DType::UInt8, like.device());
}

const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* mut_ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace

struct RNNBlock::Impl {
  struct Entry {
    Key key;
    RNNDescriptor rnn;
    cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
    RNNDataDescriptor xd, yd;
    TensorDescriptor hd;
    std::vector<int32_t> lengths;  // host copy; cuDNN keeps no pointer to it
    bool lengthsSet = false;
    Tensor devLengths;  // int32 lengths on the device, as bytes
    size_t work = 0, reserve = 0;
    bool ran = false;  // a refusal of the persistent algorithm shows at the first run at the latest
  };
  tensor::LruCache<Key, std::unique_ptr<Entry>, KeyHash> cache;  // bounded by conv.cache_limit
  std::vector<Key> refusedPersist;  // keys (persist = true) cuDNN did not take persistently
  bool saidPersist = false;

  RNNDescriptor layout;  // the weight layout's descriptor, for layoutInput
  int64_t layoutInput = -1;
  DType layoutDtype = DType::UInt8;
  size_t layoutBytes = 0;

  DropoutDescriptor noDropout, dropout;
  double p = 0;
  uint64_t seed = 0;
  bool persist = false;
  const char* algoName = "standard";

  // what backward needs from the last forward
  struct Last {
    bool valid = false, training = false, empty = false;
    int64_t batch = 0;
    Entry* entry = nullptr;
    Tensor x, y, h0, c0;
    int dataRuns = 0;
  } last;
  Tensor reserve;
};

RNNBlock::RNNBlock(DType dtype, int64_t hidden, int64_t depth, nn::RNNMode mode, RNNInputMode inputMode,
                   RNNDirection direction, bool bias)
    : dtype_(dtype),
      hidden_(hidden),
      depth_(depth),
      mode_(mode),
      inputMode_(inputMode),
      direction_(direction),
      bias_(bias),
      impl_(std::make_unique<Impl>()) {
  data_type(dtype);  // throws for dtypes cuDNN has no use for
  if (hidden <= 0 || depth <= 0) {
    throw tensor::Error("cudnn::RNNBlock: expected hidden > 0 and depth > 0, got hidden " + std::to_string(hidden) +
                        ", depth " + std::to_string(depth));
  }
}

RNNBlock::~RNNBlock() = default;
RNNBlock::RNNBlock(RNNBlock&&) noexcept = default;
RNNBlock& RNNBlock::operator=(RNNBlock&&) noexcept = default;

void RNNBlock::set_dropout(double p, uint64_t seed) {
  if (p < 0 || p >= 1)
    throw tensor::Error("cudnn::RNNBlock::set_dropout: expected p in [0, 1), got " + std::to_string(p));
  if (p == impl_->p && seed == impl_->seed) return;
  impl_->p = p;
  impl_->seed = seed;
  impl_->cache.clear();  // the RNN descriptors refer to the dropout descriptor
  impl_->last = {};
}

void RNNBlock::set_persist(bool on) { impl_->persist = on; }
const char* RNNBlock::algorithm() const { return impl_->algoName; }
size_t RNNBlock::plans() const { return impl_->cache.size(); }

bool RNNBlock::backward_data_done() const { return impl_->last.valid && impl_->last.dataRuns > 0; }

// ------------------------------------------------------------------------------ weights

int64_t RNNBlock::param_size(int64_t inputDim) {
  if (inputDim <= 0)
    throw tensor::Error("cudnn::RNNBlock::param_size: expected inputDim > 0, got " + std::to_string(inputDim));
  if (inputMode_ == RNNInputMode::Skip && inputDim != hidden_) {
    throw tensor::Error("cudnn::RNNBlock::param_size: skip input mode expects inputDim == hidden (" +
                        std::to_string(hidden_) + "), got " + std::to_string(inputDim));
  }
  Impl& m = *impl_;
  if (m.layoutInput != inputDim || m.layoutDtype != dtype_) {
    CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
        m.layout.get(), CUDNN_RNN_ALGO_STANDARD, cell_mode(mode_), bias_ ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
        direction_ == RNNDirection::Bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
        inputMode_ == RNNInputMode::Skip ? CUDNN_SKIP_INPUT : CUDNN_LINEAR_INPUT, data_type(dtype_),
        math_precision(dtype_), CUDNN_DEFAULT_MATH, static_cast<int32_t>(inputDim), static_cast<int32_t>(hidden_),
        static_cast<int32_t>(hidden_), static_cast<int32_t>(depth_), m.noDropout.set(0, 0),
        CUDNN_RNN_PADDED_IO_ENABLED));
    size_t bytes = 0;
    CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle(), m.layout.get(), &bytes));
    m.layoutInput = inputDim;
    m.layoutDtype = dtype_;
    m.layoutBytes = bytes;
  }
  return static_cast<int64_t>(m.layoutBytes / tensor::itemsize(dtype_));
}

std::vector<RNNGate> RNNBlock::split_params(const Tensor& params, int64_t layer, int64_t inputDim) {
  const std::string where = "cudnn::RNNBlock::split_params: ";
  check_cuda(where, params, "params");
  tensor::cuda::DeviceGuard guard(params.device().index);
  const int64_t n = param_size(inputDim);
  if (params.dtype() != dtype_ || params.dim() != 1 || params.numel() != n || !params.is_contiguous()) {
    throw tensor::Error(where + "expected a contiguous " + tensor::name(dtype_) + " [" + std::to_string(n) +
                        "] weight buffer, got " + params.description());
  }
  const int64_t pseudo = depth_ * directions();
  if (layer < 0 || layer >= pseudo) {
    throw tensor::Error(where + "expected a pseudo-layer in [0, " + std::to_string(pseudo) + "), got " +
                        std::to_string(layer));
  }
  const int64_t linear = 2 * nn::rnn_gate_count(mode_);
  const size_t item = tensor::itemsize(dtype_);
  const char* base = static_cast<const char*>(params.raw_data());
  auto view = [&](void* p, cudnnTensorDescriptor_t d, bool matrix) -> Tensor {
    if (!p) return Tensor();
    cudnnDataType_t dt;
    int nb = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
    CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 3, &dt, &nb, dims, strides));
    int64_t count = 1;
    for (int i = 0; i < nb && i < 3; ++i) count *= dims[i];
    const std::ptrdiff_t bytes = static_cast<const char*>(p) - base;
    if (count == 0) return Tensor();
    if (bytes < 0 || bytes % static_cast<std::ptrdiff_t>(item) != 0 || count % hidden_ != 0 ||
        bytes / static_cast<std::ptrdiff_t>(item) + count > n) {
      throw tensor::Error(where + "cuDNN placed a matrix outside the weight buffer (offset " + std::to_string(bytes) +
                          " bytes, " + std::to_string(count) + " elements)");
    }
    const int64_t offset = params.storage_offset() + bytes / static_cast<std::ptrdiff_t>(item);
    if (!matrix) return Tensor(params.storage(), offset, {count}, {1}, dtype_);
    const int64_t cols = count / hidden_;
    return Tensor(params.storage(), offset, {hidden_, cols}, {cols, 1}, dtype_);
  };
  std::vector<RNNGate> gates(static_cast<size_t>(linear));
  for (int64_t id = 0; id < linear; ++id) {
    PlainTensorDescriptor md, bd;
    void* mp = nullptr;
    void* bp = nullptr;
    CUDNN_CHECK(cudnnGetRNNWeightParams(handle(), impl_->layout.get(), static_cast<int32_t>(layer), impl_->layoutBytes,
                                        params.raw_data(), static_cast<int32_t>(id), md.get(), &mp, bd.get(), &bp));
    gates[static_cast<size_t>(id)] = {view(mp, md.get(), true), view(bp, bd.get(), false)};
  }
  return gates;
}

// ------------------------------------------------------------------------------ plans

namespace {

// The entry for key k with the lengths of s, made (or re-set) as needed. Returns nullptr when
// cuDNN refuses the persistent algorithm for it (the caller retries with the standard one).
RNNBlock::Impl::Entry* prepare(RNNBlock::Impl& m, const RNNBlock& b, const Key& k, const RNNSequence& s) {
  using Entry = RNNBlock::Impl::Entry;
  std::unique_ptr<Entry>* found = m.cache.find(k);
  Entry* e = found ? found->get() : nullptr;
  if (!e) {
    const size_t limit = config().conv_cache_limit;
    m.cache.set_capacity(limit);
    if (limit != 0 && m.cache.size() >= limit) m.last = {};  // the entry it names may go
    auto fresh = std::make_unique<Entry>();
    fresh->key = k;
    fresh->algo = k.persist ? CUDNN_RNN_ALGO_PERSIST_STATIC : CUDNN_RNN_ALGO_STANDARD;
    const bool dropping = m.p > 0 && b.depth() > 1;
    const cudnnDropoutDescriptor_t dd = dropping ? m.dropout.set(m.p, m.seed) : m.noDropout.set(0, 0);
    const cudnnStatus_t st = cudnnSetRNNDescriptor_v8(
        fresh->rnn.get(), fresh->algo, cell_mode(b.mode()), b.bias() ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
        b.directions() == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
        b.input_mode() == RNNInputMode::Skip ? CUDNN_SKIP_INPUT : CUDNN_LINEAR_INPUT, data_type(b.dtype()),
        math_precision(b.dtype()), k.math, static_cast<int32_t>(k.inputDim), static_cast<int32_t>(b.hidden()),
        static_cast<int32_t>(b.hidden()), static_cast<int32_t>(b.depth()), dd,
        k.batchFirst || k.varlen ? CUDNN_RNN_PADDED_IO_ENABLED : CUDNN_RNN_PADDED_IO_DISABLED);
    if (st != CUDNN_STATUS_SUCCESS) {
      if (k.persist && refusal(st)) return nullptr;
      check(st, "cudnnSetRNNDescriptor_v8", __LINE__);
    }
    size_t bytes = 0;
    CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle(), fresh->rnn.get(), &bytes));
    if (bytes != m.layoutBytes) {
      throw tensor::Error("cudnn::RNNBlock: cuDNN's weight space is " + std::to_string(bytes) + " bytes for " +
                          key_str(k) + " but " + std::to_string(m.layoutBytes) + " for the weight layout");
    }
    fresh->hd.set(b.dtype(), {b.depth() * b.directions(), k.batch, b.hidden()}, {k.batch * b.hidden(), b.hidden(), 1},
                  3);
    e = m.cache.put(k, std::move(fresh)).get();
  }
  std::vector<int32_t> lengths(static_cast<size_t>(k.batch), static_cast<int32_t>(k.seq));
  for (size_t i = 0; i < s.lengths.size() && i < lengths.size(); ++i) lengths[i] = static_cast<int32_t>(s.lengths[i]);
  if (!e->lengthsSet || lengths != e->lengths) {
    e->lengths = std::move(lengths);
    e->lengthsSet = false;
    const cudnnRNNDataLayout_t layout = k.batchFirst ? CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED
                                        : k.varlen   ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED
                                                     : CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;
    double zero = 0;  // paddingFill, read as the data's type: all-zero bits are 0 in each
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(e->xd.get(), data_type(b.dtype()), layout, static_cast<int>(k.seq),
                                          static_cast<int>(k.batch), static_cast<int>(k.inputDim), e->lengths.data(),
                                          &zero));
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(e->yd.get(), data_type(b.dtype()), layout, static_cast<int>(k.seq),
                                          static_cast<int>(k.batch), static_cast<int>(b.hidden() * b.directions()),
                                          e->lengths.data(), &zero));
    const size_t nbytes = e->lengths.size() * sizeof(int32_t);
    if (!e->devLengths.defined() || e->devLengths.nbytes() < nbytes) e->devLengths = empty_bytes(nbytes, s.x);
    tensor::cuda::copy_bytes(e->devLengths.raw_data(), true, e->lengths.data(), false, nbytes, s.x.device().index);
    const cudnnStatus_t st = cudnnGetRNNTempSpaceSizes(handle(), e->rnn.get(),
                                                       k.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                                                       e->xd.get(), &e->work, &e->reserve);
    if (st != CUDNN_STATUS_SUCCESS) {
      if (k.persist && refusal(st)) return nullptr;
      check(st, "cudnnGetRNNTempSpaceSizes", __LINE__);
    }
    e->lengthsSet = true;
  }
  return e;
}

void drop_entry(RNNBlock::Impl& m, const Key& k) {
  using Entry = RNNBlock::Impl::Entry;
  std::unique_ptr<Entry>* found = m.cache.find(k);
  if (!found) return;
  if (m.last.entry == found->get()) m.last = {};
  m.cache.erase(k);
}

// Note [Empty RNN batches]
// cuDNN takes no empty batch or sequence (its RNN data descriptors want sizes >= 1), so an
// empty x never reaches it: y is empty, the final states are the initial ones (zeros when
// undefined), and backward passes the states' gradients through, adds nothing to the weights'
// gradient and gives an empty dx -- what nn::RNNBase computes for B == 0. The check in forward
// lets an empty x of any strides through: tensor::contiguous_strides counts a size-0 dimension
// as 1, so [T x 0 x I] made by empty()/contiguous() has strides [I, I, 1], which
// is_contiguous() refuses, though nothing is read.
void forward_empty(RNNBlock::Impl& m, const RNNSequence& s, bool lstm, int64_t B, Tensor& y, Tensor& hy, Tensor& cy) {
  y.zero_();
  if (s.h0.defined())
    hy.copy_(s.h0);
  else
    hy.zero_();
  if (lstm) {
    if (s.c0.defined())
      cy.copy_(s.c0);
    else
      cy.zero_();
  }
  m.last.valid = true;
  m.last.training = s.training;
  m.last.empty = true;
  m.last.batch = B;
  m.last.x = s.x;
}

// k.persist where persistent kernels may serve k; else why not, said once per block
// (Note [Persistent RNN kernels]).
void choose_persist(RNNBlock::Impl& m, Key& k, DType dtype, bool varlen) {
  std::string why;
  if (dtype == DType::Float64)
    why = "float64 data";
  else if (varlen)
    why = "variable sequence lengths";
  Key pk = k;
  pk.persist = true;
  for (const Key& r : m.refusedPersist) {
    if (r == pk) why = "cuDNN refused it for these sizes";
  }
  if (why.empty())
    k.persist = true;
  else if (!m.saidPersist) {
    m.saidPersist = true;
    say("RNN " + key_str(k) + ": persistent kernels not used (" + why + "): standard algorithm");
  }
}

// what backward needs from a forward that ran on entry e
void record_forward(RNNBlock::Impl& m, RNNBlock::Impl::Entry* e, const RNNSequence& s, int64_t B, const Tensor& y) {
  m.last.valid = true;
  m.last.training = s.training;
  m.last.entry = e;
  m.last.batch = B;
  m.last.x = s.x;
  m.last.y = y;
  m.last.h0 = s.h0;
  m.last.c0 = s.c0;
}

}  // namespace

// ------------------------------------------------------------------------------ passes

void RNNBlock::forward(const Tensor& params, const RNNSequence& s, Tensor& y, Tensor& hy, Tensor& cy) {
  Impl& m = *impl_;
  const Tensor& x = s.x;
  const std::string where = "cudnn::RNNBlock::forward: ";
  check_cuda(where, x, "x");
  check_same(where, x, "x", params, "params");
  // See Note [Empty RNN batches]: an empty x need not be "contiguous"
  if (x.dim() != 3 || (!x.is_contiguous() && x.numel() != 0))
    throw tensor::Error(where + "expected a contiguous 3-d x, got " + x.description());
  tensor::cuda::DeviceGuard guard(x.device().index);
  const int64_t T = s.batchFirst ? x.size(1) : x.size(0), B = s.batchFirst ? x.size(0) : x.size(1);
  const int64_t I = x.size(2), H = hidden_, LD = depth_ * directions();
  if (params.numel() != param_size(I)) {
    throw tensor::Error(where + "expected a weight buffer of " + std::to_string(param_size(I)) +
                        " elements for input size " + std::to_string(I) + ", got " + params.description());
  }
  nn::ensure(y, s.batchFirst ? Shape{B, T, directions() * H} : Shape{T, B, directions() * H}, x);
  nn::ensure(hy, {LD, B, H}, x);
  const bool lstm = mode_ == nn::RNNMode::LSTM;
  if (lstm) nn::ensure(cy, {LD, B, H}, x);
  m.last = {};
  if (B == 0 || T == 0) {  // Note [Empty RNN batches]
    forward_empty(m, s, lstm, B, y, hy, cy);
    return;
  }
  bool varlen = false;
  for (int64_t l : s.lengths) varlen = varlen || l != T;
  Key k{I, T, B, s.batchFirst, varlen, s.training, false, math_type(dtype_)};
  if (m.persist) choose_persist(m, k, dtype_, varlen);
  for (;;) {
    Impl::Entry* e = prepare(m, *this, k, s);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (e) {
      Tensor work = empty_bytes(e->work, x);
      if (s.training && (!m.reserve.defined() || m.reserve.nbytes() < e->reserve))
        m.reserve = empty_bytes(e->reserve, x);
      st = cudnnRNNForward(handle(), e->rnn.get(), s.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                           static_cast<const int32_t*>(e->devLengths.raw_data()), e->xd.get(), x.raw_data(),
                           e->yd.get(), y.raw_data(), e->hd.get(), ptr_or_null(s.h0), hy.raw_data(), e->hd.get(),
                           ptr_or_null(s.c0), lstm ? cy.raw_data() : nullptr, m.layoutBytes, params.raw_data(), e->work,
                           work.raw_data(), s.training ? e->reserve : 0, s.training ? m.reserve.raw_data() : nullptr);
      if (st == CUDNN_STATUS_SUCCESS) {
        if (k.persist && !e->ran) say("RNN " + key_str(k) + ": persistent kernels (CUDNN_RNN_ALGO_PERSIST_STATIC)");
        e->ran = true;
        m.algoName = k.persist ? "persist_static" : "standard";
        record_forward(m, e, s, B, y);
        return;
      }
      if (!(k.persist && !e->ran && refusal(st))) check(st, "cudnnRNNForward", __LINE__);
    }
    drop_entry(m, k);
    // cuDNN refused the persistent algorithm here: the standard one from now on
    m.refusedPersist.push_back(k);
    if (!m.saidPersist) {
      m.saidPersist = true;
      say("RNN " + key_str(k) + ": cuDNN refused persistent kernels" +
          (st != CUDNN_STATUS_SUCCESS ? std::string(" (") + cudnnGetErrorString(st) + ")" : std::string()) +
          ": standard algorithm");
    }
    k.persist = false;
  }
}

void RNNBlock::backward_data(const Tensor& params, const Tensor& dy, const Tensor& dhy, const Tensor& dcy, Tensor& dx,
                             Tensor& dhx, Tensor& dcx) {
  Impl& m = *impl_;
  const std::string where = "cudnn::RNNBlock::backward_data: ";
  if (!m.last.valid) throw tensor::Error(where + "expected a forward before backward, got none");
  if (!m.last.training) {
    throw tensor::Error(where +
                        "expected a training-mode forward before backward, got an evaluate-mode (inference) "
                        "one, which keeps no reserve space: call train() and forward again");
  }
  const Tensor& x = m.last.x;
  tensor::cuda::DeviceGuard guard(x.device().index);
  const bool lstm = mode_ == nn::RNNMode::LSTM;
  const int64_t LD = depth_ * directions();
  nn::ensure(dx, x.sizes(), x);
  nn::ensure(dhx, {LD, m.last.batch, hidden_}, x);
  if (lstm) nn::ensure(dcx, {LD, m.last.batch, hidden_}, x);
  if (m.last.empty) {  // the states' gradients pass through
    dx.zero_();
    if (dhy.defined())
      dhx.copy_(dhy);
    else
      dhx.zero_();
    if (lstm) {
      if (dcy.defined())
        dcx.copy_(dcy);
      else
        dcx.zero_();
    }
    ++m.last.dataRuns;  // backward_data_done(): accGradParameters may follow
    return;
  }
  Impl::Entry* e = m.last.entry;
  Tensor work = empty_bytes(e->work, x);
  if (m.last.dataRuns > 0) {
    // cuDNN's backward consumed the reserve space: run the forward again (same inputs)
    if (m.p > 0 && depth_ > 1) {
      throw tensor::Error(where +
                          "expected one backward per forward with dropout between layers (a second "
                          "one would draw a new dropout mask): forward again first");
    }
    CUDNN_CHECK(cudnnRNNForward(handle(), e->rnn.get(), CUDNN_FWD_MODE_TRAINING,
                                static_cast<const int32_t*>(e->devLengths.raw_data()), e->xd.get(), x.raw_data(),
                                e->yd.get(), m.last.y.raw_data(), e->hd.get(), ptr_or_null(m.last.h0), nullptr,
                                e->hd.get(), ptr_or_null(m.last.c0), nullptr, m.layoutBytes, params.raw_data(), e->work,
                                work.raw_data(), e->reserve, m.reserve.raw_data()));
  }
  if (e->key.varlen) dx.zero_();  // positions past a sequence's end get no gradient
  CUDNN_CHECK(cudnnRNNBackwardData_v8(
      handle(), e->rnn.get(), static_cast<const int32_t*>(e->devLengths.raw_data()), e->yd.get(), m.last.y.raw_data(),
      dy.raw_data(), e->xd.get(), dx.raw_data(), e->hd.get(), ptr_or_null(m.last.h0), ptr_or_null(dhy), dhx.raw_data(),
      e->hd.get(), ptr_or_null(m.last.c0), ptr_or_null(dcy), lstm ? dcx.raw_data() : nullptr, m.layoutBytes,
      params.raw_data(), e->work, work.raw_data(), e->reserve, m.reserve.raw_data()));
  ++m.last.dataRuns;
}

void RNNBlock::backward_weights(const Tensor& dparams) {
  Impl& m = *impl_;
  const std::string where = "cudnn::RNNBlock::backward_weights: ";
  if (!m.last.valid || !m.last.training) {
    throw tensor::Error(where + "expected a training-mode forward and backward_data before it");
  }
  if (m.last.empty) return;
  if (m.last.dataRuns == 0) throw tensor::Error(where + "expected backward_data for the last forward first");
  check_cuda(where, dparams, "dparams");
  if (dparams.dtype() != dtype_ || dparams.numel() != static_cast<int64_t>(m.layoutBytes / tensor::itemsize(dtype_)) ||
      !dparams.is_contiguous()) {
    throw tensor::Error(where + "expected a contiguous gradient buffer like the weights (" + tensor::name(dtype_) +
                        ", " + std::to_string(m.layoutBytes / tensor::itemsize(dtype_)) + " elements), got " +
                        dparams.description());
  }
  const Tensor& x = m.last.x;
  tensor::cuda::DeviceGuard guard(x.device().index);
  Impl::Entry* e = m.last.entry;
  Tensor work = empty_bytes(e->work, x);
  CUDNN_CHECK(cudnnRNNBackwardWeights_v8(
      handle(), e->rnn.get(), CUDNN_WGRAD_MODE_ADD, static_cast<const int32_t*>(e->devLengths.raw_data()), e->xd.get(),
      x.raw_data(), e->hd.get(), ptr_or_null(m.last.h0), e->yd.get(), m.last.y.raw_data(), m.layoutBytes,
      dparams.raw_data(), e->work, work.raw_data(), e->reserve, m.reserve.raw_data()));
}

// ------------------------------------------------------------------------------ Theano's form

std::vector<Tensor> RNNBlock::apply(const Tensor& params, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  const std::string where = "cudnn::RNNBlock::apply: ";
  check_cuda(where, x, "x");
  if (x.dim() != 3)
    throw tensor::Error(where + "expected x of [T x B x inputDim], got " + tensor::shape_str(x.sizes()));
  const Shape state = {depth_ * directions(), x.size(1), hidden_};
  for (const auto& [t, name] : {std::pair{&h0, "h0"}, std::pair{&c0, "c0"}}) {
    if (t->defined() && t->sizes() != state) {
      throw tensor::Error(where + "expected " + name + " of " + tensor::shape_str(state) + ", got " +
                          tensor::shape_str(t->sizes()));
    }
  }
  if (c0.defined() && mode_ != nn::RNNMode::LSTM)
    throw tensor::Error(where + "expected no c0 for a " + nn::rnn_mode_name(mode_) + " block");
  RNNSequence s;
  s.x = x.contiguous();
  s.h0 = h0.defined() ? h0.contiguous() : Tensor();
  s.c0 = c0.defined() ? c0.contiguous() : Tensor();
  Tensor y, hy, cy;
  forward(params, s, y, hy, cy);
  return {y, hy, cy};
}

std::vector<Tensor> RNNBlock::grad(const Tensor& params, const Tensor& dy, const Tensor& dhy, const Tensor& dcy) {
  const std::string where = "cudnn::RNNBlock::grad: ";
  if (!impl_->last.valid) throw tensor::Error(where + "expected apply() first");
  if (dy.sizes() != impl_->last.y.sizes() && !impl_->last.empty) {
    throw tensor::Error(where + "expected dy of " + tensor::shape_str(impl_->last.y.sizes()) + ", got " +
                        tensor::shape_str(dy.sizes()));
  }
  Tensor dx, dhx, dcx;
  backward_data(params, dy.contiguous(), dhy.defined() ? dhy.contiguous() : Tensor(),
                dcy.defined() ? dcy.contiguous() : Tensor(), dx, dhx, dcx);
  Tensor dparams = tensor::zeros({params.numel()}, dtype_, params.device());
  backward_weights(dparams);
  return {dx, dhx, dcx, dparams};
}

}  // namespace cudnn
