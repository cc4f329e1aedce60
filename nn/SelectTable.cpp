// SelectTable.cpp
#include "nn/SelectTable.h"

#include "nn/ModuleConfig.h"

namespace nn {

SelectTable::SelectTable(int64_t index_) : index(index_) {}

const Value& SelectTable::updateOutputValue(const Value& input) {
  const Table& items = input.table(where("updateOutput"));
  outputValue = items[resolvePosition(index, items.size(), "updateOutput")];
  return outputValue;
}

const Value& SelectTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const Table& items = input.table(where("updateGradInput"));
  const size_t at = resolvePosition(index, items.size(), "updateGradInput");
  check_grad_structure(where("updateGradInput"), items[at], gradOutput);
  Table grads(items.size());
  for (size_t i = 0; i < items.size(); ++i) grads[i] = i == at ? gradOutput : zeros_like(items[i]);
  gradInputValue = std::move(grads);
  return gradInputValue;
}

std::string SelectTable::str() const { return type_name() + "(" + std::to_string(index) + ")"; }

tensor::Json SelectTable::config() const { return tensor::Json::Object{{"index", index}}; }

ModulePtr SelectTable::fromConfig(const tensor::Json& config) {
  ConfigReader r(config, kTypeName);
  const int64_t index = r.integer("index");
  r.finish();
  return std::make_shared<SelectTable>(index);
}

}  // namespace nn
