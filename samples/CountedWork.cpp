// CountedWork.cpp
#include "samples/CountedWork.h"

#include <algorithm>
#include <utility>

#include "nn/BatchNormalization.h"
#include "nn/Contiguous.h"
#include "nn/ConvolutionBase.h"
#include "nn/Dropout.h"
#include "nn/ElementwiseTableBase.h"
#include "nn/Graph.h"
#include "nn/GroupNormBase.h"
#include "nn/Identity.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/ModuleWrapper.h"
#include "nn/PointwiseBase.h"
#include "nn/PoolingBase.h"
#include "nn/RNNBase.h"
#include "nn/ReshapeBase.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/SoftMaxBase.h"
#include "nn/Squeeze.h"
#include "nn/Unsqueeze.h"

namespace samples {

// Note [Counted work]
// The roofline figures count what a pass must do, not what our kernels happen to do, so the
// same numbers serve PyTorch's times (scripts/bench_torch.py) and ours, fused or not. Per leaf
// module, from its type, its input and output elements (in, out), its parameters' elements (W)
// and b, the run's bytes per element:
//   - products (the convolutions, Linear, the recurrent modules): M multiply-adds, 2M FLOPs
//     forward. A convolution M = out x W / nOutputPlane (N*K*P*Q x C/groups*R*S; transposed:
//     in x W / nInputPlane), Linear M = rows x W, a recurrent module M = T*N x the elements of
//     its weight matrices (the gate arithmetic left out). Backward: the weight gradient (2M)
//     and, where gradInput is needed, the data gradient (2M more): 4M in all, 2M for a first
//     layer whose input needs no gradient (a recurrent module computes it anyway:
//     Module::parametersNeedGradInput). Bias adds are left out.
//   - elementwise modules: k FLOPs per output element, forward and backward alike: 1 for an
//     activation and dropout, 4 for batch, layer and group norm (statistics, normalisation,
//     scale and shift) and softmax; pooling: its window's size per output element; a sum of n
//     tensors (CAddTable, a residual unit's): n - 1 per element.
//   - reshapes and layout changes (View, Reshape, Contiguous, Identity, ...): nothing, they are
//     no work the network asks for.
// Bytes: the least a pass moves through device memory when each layer reads its input and its
// weights once and writes its output once (reuse inside a layer is the caches' business; no
// fusion that skips an intermediate is assumed, so a fused network counts as the unfused one):
//   - forward: b x (in + out + W) per leaf; a sum of n tensors b x (n + 1) x out;
//   - backward of a product: gradOutput and the input read and gradWeight written,
//     b x (out + in + W), plus, with the data gradient, the weights read and gradInput
//     written, b x (W + in);
//   - backward of an elementwise module: gradOutput and the saved input (or output) read,
//     gradInput and its parameters' gradient written, b x (out + 2 in + W); nothing where it
//     needs no gradInput and has no parameters;
//   - a sum passes its gradient on (nothing); a tensor used twice (a residual unit's input, a
//     graph node with k consumers) has its gradients summed: (k - 1) x in FLOPs and
//     b x (k + 1) x in.
// Running statistics, dropout masks, pooling indices and workspaces are left out: the figures
// are lower bounds (a row's real traffic is larger), so a row's share of a peak says how far its
// time is from the least the work could take.
// CountedWork::step adds the loss (its scores read and their gradient written: 2 x out) and the
// optimizer (per parameter the gradient read in the model's dtype, the weight and the states read
// and written in the master dtype, and in a mixed-precision step the model's weight written); the
// FLOPs of both are left out (under 1% of any step here).

Work CountedWork::step(int optimizerStates, size_t lossItemsize, size_t masterItemsize) const {
  Work w = forwardBackward();
  const double p = static_cast<double>(parameters);
  w.bytes += static_cast<double>(lossItemsize) * 2 * static_cast<double>(outputElements);
  w.bytes += p * (static_cast<double>(itemsize) + 2.0 * (1 + optimizerStates) * static_cast<double>(masterItemsize));
  if (masterItemsize != itemsize) w.bytes += p * static_cast<double>(itemsize);  // the model's copy refreshed
  return w;
}

namespace {

using tensor::Shape;
using Shapes = std::vector<Shape>;  // a module's input or output: one tensor, or a table's

double elements(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

double elements(const Shapes& s) {
  double n = 0;
  for (const Shape& t : s) n += elements(t);
  return n;
}

void add_shapes(const nn::Value& v, Shapes& out) {
  if (v.isTable()) {
    for (size_t i = 0; i < v.size(); ++i) add_shapes(v[i], out);
  } else if (v.isTensor()) {
    out.push_back(v.tensorOrUndefined().sizes());
  }
}

// Modules that keep their input's shape: a fused pair's first module has the pair's output shape
// when everything after it is one of these.
bool keeps_shape(const nn::Module& m) {
  return dynamic_cast<const nn::PointwiseBase*>(&m) || dynamic_cast<const nn::Dropout*>(&m) ||
         dynamic_cast<const nn::BatchNormalization*>(&m) || dynamic_cast<const nn::Identity*>(&m);
}

class Counter {
 public:
  explicit Counter(size_t itemsize) : b_(static_cast<double>(itemsize)) {}

  // Counts `m` on `in`, returns its output's shapes. gradInput: whether its gradInput is needed;
  // hint: its output's shape where the parent knows it (a fused twin leaves its parts' outputs
  // empty), else nullptr.
  Shapes walk(nn::Module& module, const Shapes& in, bool gradInput, const Shapes* hint,
              std::vector<CountedWork>* layers = nullptr) {
    nn::Module& m = nn::unwrapped(module);
    if (auto* s = dynamic_cast<nn::Sequential*>(&m)) return sequential(*s, in, gradInput, hint, layers);
    if (auto* r = dynamic_cast<nn::Residual*>(&m)) return residual(*r, in, gradInput, hint);
    if (auto* g = dynamic_cast<nn::Graph*>(&m)) return graph(*g, in, gradInput, hint);
    const Shapes out = output_of(m, hint);
    leaf(m, elements(in), elements(out), in.size(), gradInput);
    return out;
  }

  CountedWork work;

 private:
  double b_;

  void uncounted(const nn::Module& m) {
    const std::string t = m.type_name();
    if (std::find(work.uncounted.begin(), work.uncounted.end(), t) == work.uncounted.end()) {
      work.uncounted.push_back(t);
    }
  }

  static Shapes output_of(const nn::Module& m, const Shapes* hint) {
    Shapes out;
    if (m.output.defined()) {
      out.push_back(m.output.sizes());
    } else {
      add_shapes(m.outputValue, out);
    }
    if (out.empty() && hint) out = *hint;
    if (out.empty()) {
      throw tensor::Error("samples::count_work: " + m.type_name() +
                          " has no output to count from: run the network's forward first");
    }
    return out;
  }

  void product(double macs, double in, double out, double w, bool gradInput) {
    work.forward += {2 * macs, b_ * (in + out + w)};
    work.backward += {2 * macs, b_ * (out + in + w)};           // the weight gradient
    if (gradInput) work.backward += {2 * macs, b_ * (w + in)};  // the data gradient
  }

  void elementwise(double k, double in, double out, double w, bool gradInput) {
    work.forward += {k * out, b_ * (in + out + w)};
    if (gradInput || w > 0) work.backward += {k * out, b_ * (out + in + (gradInput ? in : 0) + w)};
  }

  // a tensor of `n` elements whose gradient comes back from `consumers` uses, summed
  void fan_out(double n, size_t consumers) {
    if (consumers > 1)
      work.backward += {static_cast<double>(consumers - 1) * n, b_ * static_cast<double>(consumers + 1) * n};
  }

  void leaf(nn::Module& m, double in, double out, size_t inputs, bool gradInput) {
    double w = 0;
    for (const tensor::Tensor& p : m.parameters()) w += static_cast<double>(p.numel());
    if (auto* c = dynamic_cast<nn::ConvolutionBase*>(&m)) {
      const double wn = static_cast<double>(c->weight.numel());
      const double macs = c->transposed() ? in * wn / static_cast<double>(c->nInputPlane)
                                          : out * wn / static_cast<double>(c->nOutputPlane);
      product(macs, in, out, w, gradInput);
    } else if (auto* l = dynamic_cast<nn::Linear*>(&m)) {
      product(out / static_cast<double>(l->outputSize) * static_cast<double>(l->weight.numel()), in, out, w, gradInput);
    } else if (auto* r = dynamic_cast<nn::RNNBase*>(&m)) {
      // per layer and direction, the gates' [G*H x layer input] and [G*H x H] matrices
      const double H = static_cast<double>(r->outputDim()), G = static_cast<double>(r->gateCount());
      const double D = static_cast<double>(r->numDirections());
      double matrices = 0;
      for (int64_t layer = 0; layer < r->numLayers(); ++layer) {
        const double layerInput = layer == 0 ? static_cast<double>(r->inputDim()) : H * D;
        matrices += D * G * H * (layerInput + H);
      }
      product(in / static_cast<double>(r->inputDim()) * matrices, in, out, w, true);
    } else if (auto* sp = dynamic_cast<nn::SpatialPooling*>(&m)) {
      elementwise(static_cast<double>(sp->kW * sp->kH), in, out, w, gradInput);
    } else if (auto* vp = dynamic_cast<nn::VolumetricPooling*>(&m)) {
      elementwise(static_cast<double>(vp->kT * vp->kW * vp->kH), in, out, w, gradInput);
    } else if (dynamic_cast<nn::PointwiseBase*>(&m) || dynamic_cast<nn::Dropout*>(&m)) {
      elementwise(1, in, out, w, gradInput);
    } else if (dynamic_cast<nn::BatchNormalization*>(&m) || dynamic_cast<nn::LayerNorm*>(&m) ||
               dynamic_cast<nn::GroupNormBase*>(&m) || dynamic_cast<nn::SoftMaxBase*>(&m)) {
      elementwise(4, in, out, w, gradInput);
    } else if (auto* t = dynamic_cast<nn::ElementwiseTableBase*>(&m)) {
      const double n = static_cast<double>(inputs);
      work.forward += {(n - 1) * out, b_ * (in + out)};
      if (t->op() != nn::TableOp::Add && gradInput) work.backward += {n * out, b_ * (out + 2 * in)};
    } else if (!(dynamic_cast<nn::ReshapeBase*>(&m) || dynamic_cast<nn::Contiguous*>(&m) ||
                 dynamic_cast<nn::Identity*>(&m) || dynamic_cast<nn::Squeeze*>(&m) ||
                 dynamic_cast<nn::Unsqueeze*>(&m))) {
      uncounted(m);
    }
  }

  // layers: each child's share appended there (the top-level Sequential's)
  Shapes sequential(nn::Sequential& s, const Shapes& in, bool gradInput, const Shapes* hint,
                    std::vector<CountedWork>* layers = nullptr) {
    Shapes own;
    if (s.output.defined()) own.push_back(s.output.sizes());
    const Shapes* outHint = own.empty() ? hint : &own;
    Shapes current = in;
    for (size_t i = 0; i < s.modules.size(); ++i) {
      bool rest = true;  // every later child keeps the shape: this child's output is the whole's
      for (size_t j = i + 1; j < s.modules.size(); ++j) {
        rest = rest && s.modules[j] && keeps_shape(nn::unwrapped(*s.modules[j]));
      }
      const Work forward = work.forward, backward = work.backward;
      current = walk(nn::child_at(s, s.modules, i, "count_work"), current, i == 0 ? gradInput : true,
                     rest ? outHint : nullptr);
      if (layers) {
        CountedWork layer;
        layer.forward = work.forward - forward;
        layer.backward = work.backward - backward;
        layers->push_back(layer);
      }
    }
    return current;
  }

  Shapes residual(nn::Residual& r, const Shapes& in, bool gradInput, const Shapes* hint) {
    Shapes own;
    if (r.output.defined()) own.push_back(r.output.sizes());
    const Shapes* outHint = own.empty() ? hint : &own;
    const Shapes out = walk(*r.block(), in, gradInput, outHint);
    if (r.shortcut()) walk(*r.shortcut(), in, gradInput, outHint);
    const double n = elements(out);
    work.forward += {n, b_ * 3 * n};  // block + shortcut
    if (gradInput) fan_out(elements(in), 2);
    return out;
  }

  // The wiring from Graph::config(): nodes in topological order, each a graph input (no
  // "module") or a module on the values of its "inputs".
  Shapes graph(nn::Graph& g, const Shapes& in, bool gradInput, const Shapes* hint) {
    Shapes own;
    if (g.output.defined()) own.push_back(g.output.sizes());
    const Shapes* outHint = own.empty() ? hint : &own;
    const tensor::Json config = g.config();
    const tensor::Json::Array& nodes = config.at("nodes").as_array();
    const tensor::Json::Array& inputs = config.at("inputs").as_array();
    const tensor::Json::Array& outputs = config.at("outputs").as_array();
    std::vector<Shapes> value(nodes.size());
    std::vector<bool> needsGrad(nodes.size(), true);
    std::vector<size_t> consumers(nodes.size(), 0);
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto id = static_cast<size_t>(inputs[k].as_int());
      value.at(id) = inputs.size() == 1 ? in : Shapes{in.at(k)};
      needsGrad[id] = gradInput;
    }
    for (const tensor::Json& node : nodes) {
      for (const tensor::Json& id : node.at("inputs").as_array()) ++consumers.at(static_cast<size_t>(id.as_int()));
    }
    for (size_t id = 0; id < nodes.size(); ++id) {
      const tensor::Json* module = nodes[id].find("module");
      if (!module) continue;
      Shapes args;
      bool wantGrad = false;
      for (const tensor::Json& from : nodes[id].at("inputs").as_array()) {
        const auto f = static_cast<size_t>(from.as_int());
        args.insert(args.end(), value.at(f).begin(), value.at(f).end());
        wantGrad = wantGrad || needsGrad[f];
      }
      const bool single = outputs.size() == 1 && static_cast<size_t>(outputs[0].as_int()) == id;
      nn::Module& child = nn::child_at(g, g.modules, static_cast<size_t>(module->as_int()), "count_work");
      value[id] = walk(child, args, wantGrad, single ? outHint : nullptr);
    }
    for (size_t id = 0; id < nodes.size(); ++id) {
      if (needsGrad[id]) fan_out(elements(value[id]), consumers[id]);
    }
    Shapes out;
    for (const tensor::Json& o : outputs) {
      const Shapes& v = value.at(static_cast<size_t>(o.as_int()));
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }
};

}  // namespace

CountedWork count_work(nn::Module& net, const tensor::Shape& input, tensor::DType dtype, bool inputGrad) {
  const size_t itemsize = tensor::itemsize(dtype);
  Counter counter(itemsize);
  std::vector<CountedWork> layers;
  counter.walk(net, Shapes{input}, inputGrad, nullptr, &layers);
  CountedWork w = counter.work;
  w.itemsize = itemsize;
  for (CountedWork& l : layers) l.itemsize = itemsize;
  w.layers = std::move(layers);
  for (const tensor::Tensor& p : net.parameters()) w.parameters += p.numel();
  const tensor::Tensor& y = net.output.defined() ? net.output : nn::unwrapped(net).output;
  w.outputElements = y.defined() ? y.numel() : 0;
  return w;
}

}  // namespace samples
