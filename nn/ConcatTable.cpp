// ConcatTable.cpp
#include "nn/ConcatTable.h"

#include "nn/ModuleConfig.h"
#include "nn/TableModule.h"

namespace nn {

ConcatTable::ConcatTable(std::initializer_list<ModulePtr> children) {
  for (const auto& c : children) add(c);
}

const Tensor& ConcatTable::updateOutput(const Tensor&) { refuseTensorInterface("updateOutput"); }

const Tensor& ConcatTable::updateGradInput(const Tensor&, const Tensor&) { refuseTensorInterface("updateGradInput"); }

const Value& ConcatTable::updateOutputValue(const Value& input) {
  if (modules.empty()) throw Error(where("updateOutput") + "expected at least one module, got none");
  Table outs(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    outs[i] = rethrowErrors(i, [&]() -> const Value& { return child_at(*this, modules, i, "forward").forward(input); });
  }
  outputValue = std::move(outs);
  return outputValue;
}

// step(child i, its gradOutput) returns the child's gradInput, summed into gradInputValue.
template <class Step>
void ConcatTable::backwardPass(const Value& gradOutput, Step step) {
  if (outputValue.size() != modules.size()) {
    throw Error(where("backward") + "expected a forward() first with the current " + std::to_string(modules.size()) +
                " modules");
  }
  check_grad_structure(where("backward"), outputValue, gradOutput);
  bool first = true;
  for (size_t i = 0; i < modules.size(); ++i) {
    const Value& g = rethrowErrors(
        i, [&]() -> const Value& { return step(child_at(*this, modules, i, "backward"), gradOutput[i]); });
    if (g.empty()) continue;  // a child without gradInput (Note [gradInput not needed] in Module.cpp)
    if (first) {
      copy_into(gradInputValue, g);
      first = false;
    } else {
      accumulate(gradInputValue, g, where("backward"));
    }
  }
  if (first) gradInputValue = Value();
  if (freesIntermediateGradients()) releaseChildGradInputs();
}

const Value& ConcatTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  backwardPass(gradOutput, [&](Module& m, const Value& g) -> const Value& { return m.updateGradInputValue(input, g); });
  return gradInputValue;
}

void ConcatTable::accGradParametersValue(const Value& input, const Value& gradOutput, double scale) {
  check_grad_structure(where("accGradParameters"), outputValue, gradOutput);
  for (size_t i = 0; i < modules.size(); ++i) {
    rethrowErrors(i, [&] {
      child_at(*this, modules, i, "accGradParameters").accGradParametersValue(input, gradOutput[i], scale);
    });
  }
}

void ConcatTable::backwardValueImpl(const Value& input, const Value& gradOutput, double scale) {
  backwardPass(gradOutput, [&](Module& m, const Value& g) -> const Value& { return m.backward(input, g, scale); });
}

std::string branches_str(const Container& c, const std::vector<ModulePtr>& kids, const char* method) {
  std::string s = c.type_name() + " {\n  input";
  for (size_t i = 0; i < kids.size(); ++i) {
    const bool last = i + 1 == kids.size();
    s += std::string("\n    ") + (last ? "`" : "|`") + "-> (" + std::to_string(i + 1) +
         "): " + indent_lines(child_at(c, kids, i, method).str(), last ? "         " : "    |    ");
  }
  return s + "\n     ... -> output\n}";
}

std::string ConcatTable::str() const { return branches_str(*this, modules, "str"); }

ModulePtr ConcatTable::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  auto m = std::make_shared<ConcatTable>();
  for (auto& child : children) m->add(std::move(child));
  return m;
}

}  // namespace nn
