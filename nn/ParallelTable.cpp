// ParallelTable.cpp
#include "nn/ParallelTable.h"

#include "nn/ConcatTable.h"
#include "nn/ModuleConfig.h"
#include "nn/TableModule.h"

namespace nn {

ParallelTable::ParallelTable(std::initializer_list<ModulePtr> children) {
  for (const auto& c : children) add(c);
}

const Tensor& ParallelTable::updateOutput(const Tensor&) { refuseTensorInterface("updateOutput"); }

const Tensor& ParallelTable::updateGradInput(const Tensor&, const Tensor&) { refuseTensorInterface("updateGradInput"); }

const Table& ParallelTable::entries(const Value& input, const char* method) const {
  const Table& items = input.table(where(method));
  if (items.size() != modules.size()) {
    throw Error(where(method) + "expected a table of " + std::to_string(modules.size()) +
                " entries (one per module), got " + input.description());
  }
  return items;
}

const Value& ParallelTable::updateOutputValue(const Value& input) {
  const Table& items = entries(input, "updateOutput");
  Table outs(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    outs[i] =
        rethrowErrors(i, [&]() -> const Value& { return child_at(*this, modules, i, "forward").forward(items[i]); });
  }
  outputValue = std::move(outs);
  return outputValue;
}

template <class Step>
void ParallelTable::backwardPass(const Value& input, const Value& gradOutput, Step step) {
  const Table& items = entries(input, "backward");
  check_grad_structure(where("backward"), outputValue, gradOutput);
  Table grads(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    grads[i] = rethrowErrors(
        i, [&]() -> const Value& { return step(child_at(*this, modules, i, "backward"), items[i], gradOutput[i]); });
  }
  gradInputValue = std::move(grads);
}

const Value& ParallelTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  backwardPass(input, gradOutput, [](Module& m, const Value& in, const Value& g) -> const Value& {
    return m.updateGradInputValue(in, g);
  });
  return gradInputValue;
}

void ParallelTable::accGradParametersValue(const Value& input, const Value& gradOutput, double scale) {
  const Table& items = entries(input, "accGradParameters");
  check_grad_structure(where("accGradParameters"), outputValue, gradOutput);
  for (size_t i = 0; i < modules.size(); ++i) {
    rethrowErrors(i, [&] {
      child_at(*this, modules, i, "accGradParameters").accGradParametersValue(items[i], gradOutput[i], scale);
    });
  }
}

void ParallelTable::backwardValueImpl(const Value& input, const Value& gradOutput, double scale) {
  backwardPass(input, gradOutput, [scale](Module& m, const Value& in, const Value& g) -> const Value& {
    return m.backward(in, g, scale);
  });
}

std::string ParallelTable::str() const { return branches_str(*this, modules, "str"); }

ModulePtr ParallelTable::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  auto m = std::make_shared<ParallelTable>();
  for (auto& child : children) m->add(std::move(child));
  return m;
}

}  // namespace nn
