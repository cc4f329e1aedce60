// ElementwiseTableBase.cpp
#include "nn/ElementwiseTableBase.h"

#include <cstdint>

#include "nn/Buffers.h"

namespace nn {

Shape broadcast_shapes(const std::string& where, const std::vector<Tensor>& entries) {
  Shape out = entries.front().sizes();
  try {
    for (size_t i = 1; i < entries.size(); ++i) out = tensor::broadcast_shapes(out, entries[i].sizes(), "broadcast");
  } catch (const Error&) {  // the tensor layer's rule; the message names every entry
    std::string shapes;
    for (size_t i = 0; i < entries.size(); ++i) shapes += (i ? ", " : "") + tensor::shape_str(entries[i].sizes());
    throw Error(where + "expected entries that broadcast to one shape, got " + shapes);
  }
  return out;
}

Tensor sum_to_shape(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  Tensor r = t;
  while (r.dim() > static_cast<int64_t>(shape.size())) r = r.sum(0);
  for (int64_t d = 0; d < r.dim(); ++d) {
    if (shape[d] == 1 && r.size(d) != 1) r = r.sum(d, true);
  }
  return r;
}

const Value& ElementwiseTableBase::updateOutputValue(const Value& input) {
  const bool pair = op_ == TableOp::Sub || op_ == TableOp::Div;
  const std::vector<Tensor> xs = tensorEntries(input, "updateOutput", pair ? 2 : 1, pair ? 2 : SIZE_MAX);
  check_floating(where("updateOutput"), xs[0], "entry 0 of the input");
  // the first entry's layout where it has the output's shape (a channels-last network's sums stay
  // channels-last, as Residual's do)
  const Shape shape = broadcast_shapes(where("updateOutput"), xs);
  ensure(output, shape, xs[0],
         xs[0].sizes() == shape ? tensor::suggest_memory_format(xs[0]) : tensor::MemoryFormat::Contiguous);
  size_t done = 1;
  if (xs.size() >= 2 && (op_ == TableOp::Add || op_ == TableOp::Sub)) {
    add_out(output, xs[0], xs[1], op_ == TableOp::Add ? 1.0 : -1.0);  // one pass, not a copy and an add
    done = 2;
  } else {
    output.copy_(xs[0]);
  }
  for (size_t i = done; i < xs.size(); ++i) {
    switch (op_) {
      case TableOp::Add:
        output.add_(xs[i]);
        break;
      case TableOp::Sub:
        output.sub_(xs[i]);
        break;
      case TableOp::Mul:
        output.mul_(xs[i]);
        break;
      case TableOp::Div:
        output.div_(xs[i]);
        break;
    }
  }
  outputValue = output;
  return outputValue;
}

const Value& ElementwiseTableBase::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const bool pair = op_ == TableOp::Sub || op_ == TableOp::Div;
  const std::vector<Tensor> xs = tensorEntries(input, "updateGradInput", pair ? 2 : 1, pair ? 2 : SIZE_MAX);
  const Tensor& g = gradOutput.tensor(where("updateGradInput"), "gradOutput");
  const Shape shape = broadcast_shapes(where("updateGradInput"), xs);
  check_grad_output_shape(where("updateGradInput"), shape, g);
  gradInputs_.resize(xs.size());
  Table grads(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (op_ == TableOp::Add || (op_ == TableOp::Sub && i == 0)) {  // gradOutput itself, as Identity gives
      grads[i] = sum_to_shape(g, xs[i].sizes());
      continue;
    }
    Tensor& gi = gradInputs_[i];
    ensure(gi, shape, xs[i], tensor::suggest_memory_format(g));
    gi.copy_(g);
    switch (op_) {
      case TableOp::Add:
        break;
      case TableOp::Sub:
        gi.neg_();
        break;
      case TableOp::Mul:
        for (size_t j = 0; j < xs.size(); ++j) {
          if (j != i) gi.mul_(xs[j]);
        }
        break;
      case TableOp::Div:
        if (i == 0) {
          gi.div_(xs[1]);
        } else {  // -g * x1 / (x2 * x2), PyTorch's order
          gi.mul_(xs[0]).div_(xs[1]).div_(xs[1]).neg_();
        }
        break;
    }
    grads[i] = sum_to_shape(gi, xs[i].sizes());
  }
  gradInputValue = std::move(grads);
  return gradInputValue;
}

}  // namespace nn
