// FlattenTable.cpp
#include "nn/FlattenTable.h"

#include "nn/ModuleConfig.h"

namespace nn {

namespace {
// input's structure with its tensors taken in order from `flat`
Value unflatten(const Value& input, const Table& flat, size_t& next) {
  if (!input.isTable()) return flat[next++];
  Table items(input.size());
  for (size_t i = 0; i < input.size(); ++i) items[i] = unflatten(input[i], flat, next);
  return items;
}
}  // namespace

const Value& FlattenTable::updateOutputValue(const Value& input) {
  if (input.empty()) throw Error(where("updateOutput") + "expected a table or a tensor, got nothing");
  Table flat;
  for (const Tensor& t : tensors_of(input)) flat.emplace_back(t);
  outputValue = std::move(flat);
  return outputValue;
}

const Value& FlattenTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const Table& flat = gradOutput.table(where("updateGradInput"), "gradOutput");
  const std::vector<Tensor> ins = tensors_of(input);
  if (flat.size() != ins.size()) {
    throw Error(where("updateGradInput") + "expected gradOutput to be a table of " + std::to_string(ins.size()) +
                " tensors, got " + gradOutput.description());
  }
  for (size_t i = 0; i < flat.size(); ++i) {
    const std::string what = "entry " + std::to_string(i) + " of gradOutput";
    check_grad_output_shape(where("updateGradInput"), ins[i].sizes(),
                            flat[i].tensor(where("updateGradInput"), what.c_str()));
  }
  size_t next = 0;
  gradInputValue = unflatten(input, flat, next);
  return gradInputValue;
}

ModulePtr FlattenTable::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<FlattenTable>();
}

}  // namespace nn
