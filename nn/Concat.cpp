// Concat.cpp
#include "nn/Concat.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Concat::Concat(int64_t dimension_) : dimension(dimension_) {}

Concat::Concat(int64_t dimension_, std::initializer_list<ModulePtr> children) : dimension(dimension_) {
  for (const auto& c : children) add(c);
}

Shape Concat::outputShape(const std::vector<Tensor>& outputs) const {
  const Shape& first = outputs.front().sizes();
  const int64_t rank = static_cast<int64_t>(first.size());
  if (dimension < -rank || dimension >= rank) {
    throw Error(where("updateOutput") + "expected dimension in [" + std::to_string(-rank) + ", " +
                std::to_string(rank - 1) + "] for outputs of " + tensor::shape_str(first) + ", got " +
                std::to_string(dimension));
  }
  const int64_t d = dimension < 0 ? dimension + rank : dimension;
  Shape shape = first;
  for (size_t i = 1; i < outputs.size(); ++i) {
    const Shape& s = outputs[i].sizes();
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t k = 0; ok && k < rank; ++k) ok = k == d || s[k] == first[k];
    if (!ok) {
      throw Error(where("updateOutput") + "expected the output of module " + std::to_string(i + 1) + " to match " +
                  tensor::shape_str(first) + " (module 1) except in dimension " + std::to_string(d) + ", got " +
                  tensor::shape_str(s));
    }
    shape[d] += s[d];
  }
  return shape;
}

const Tensor& Concat::updateOutput(const Tensor& input) {
  if (modules.empty()) throw Error(where("updateOutput") + "expected at least one module, got none");
  std::vector<Tensor> outs(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    outs[i] =
        rethrowErrors(i, [&]() -> const Tensor& { return child_at(*this, modules, i, "forward").forward(input); });
  }
  const Shape shape = outputShape(outs);
  dim_ = dimension < 0 ? dimension + static_cast<int64_t>(shape.size()) : dimension;
  ensure(output, shape, outs.front());
  extents_.resize(modules.size());
  int64_t offset = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    extents_[i] = outs[i].size(dim_);
    output.narrow(dim_, offset, extents_[i]).copy_(outs[i]);
    offset += extents_[i];
  }
  return output;
}

Tensor Concat::gradSlice(const Tensor& gradOutput, size_t i) const {
  int64_t offset = 0;
  for (size_t k = 0; k < i; ++k) offset += extents_[k];
  return gradOutput.narrow(dim_, offset, extents_[i]).contiguous();
}

template <class Step>
void Concat::backwardPass(const Tensor& gradOutput, bool wantGradInput, Step step) {
  if (extents_.size() != modules.size()) {
    throw Error(where("backward") + "expected a forward() first with the current " + std::to_string(modules.size()) +
                " modules");
  }
  if (gradOutput.sizes() != output.sizes()) {
    throw Error(where("backward") + "expected gradOutput of " + tensor::shape_str(output.sizes()) + ", got " +
                tensor::shape_str(gradOutput.sizes()));
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    const Tensor g = rethrowErrors(
        i, [&]() -> const Tensor& { return step(child_at(*this, modules, i, "backward"), gradSlice(gradOutput, i)); });
    if (!wantGradInput) {
      gradInput = Tensor();  // Note [gradInput not needed] in Module.cpp
    } else if (i == 0) {
      ensure(gradInput, g.sizes(), g).copy_(g);
    } else {
      gradInput.add_(g);
    }
  }
}

const Tensor& Concat::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  backwardPass(gradOutput, true,
               [&](Module& m, const Tensor& g) -> const Tensor& { return m.updateGradInput(input, g); });
  return gradInput;
}

void Concat::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (extents_.size() != modules.size()) {
    throw Error(where("accGradParameters") + "expected a forward() first with the current " +
                std::to_string(modules.size()) + " modules");
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    rethrowErrors(i, [&]() {
      child_at(*this, modules, i, "accGradParameters").accGradParameters(input, gradSlice(gradOutput, i), scale);
    });
  }
}

void Concat::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(gradOutput, gradInputNeeded(),
               [&](Module& m, const Tensor& g) -> const Tensor& { return m.backward(input, g, scale); });
  releaseChildGradInputs();  // summed into gradInput now
}

std::string Concat::str() const {
  // Torch's layout: children hang off a vertical rule between "input" and "output".
  std::string s = type_name() + " {\n  input";
  for (size_t i = 0; i < modules.size(); ++i) {
    s += "\n    |`-> (" + std::to_string(i + 1) +
         "): " + indent_lines(child_at(*this, modules, i, "str").str(), "    |    ");
  }
  return s + "\n     ... -> output\n}";
}

tensor::Json Concat::config() const { return tensor::Json::Object{{"dimension", dimension}}; }

ModulePtr Concat::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader c(config, kTypeName);
  auto m = std::make_shared<Concat>(c.integer("dimension"));
  c.finish();
  for (auto& child : children) m->add(std::move(child));
  return m;
}

}  // namespace nn
