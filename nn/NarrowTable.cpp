// NarrowTable.cpp
#include "nn/NarrowTable.h"

#include "nn/ModuleConfig.h"

namespace nn {

NarrowTable::NarrowTable(int64_t offset_, int64_t length_) : offset(offset_), length(length_) {}

std::pair<size_t, size_t> NarrowTable::window(const Table& items, const char* method) const {
  const auto n = static_cast<int64_t>(items.size());
  const int64_t begin = offset < 0 ? offset + n : offset;
  const int64_t end = length < 0 ? n + length + 1 : begin + length;
  if (begin < 0 || begin > n || end < begin || end > n) {
    throw Error(where(method) + "expected offset " + std::to_string(offset) + " and length " + std::to_string(length) +
                " to lie in a table of " + std::to_string(n) + " entries");
  }
  return {static_cast<size_t>(begin), static_cast<size_t>(end)};
}

const Value& NarrowTable::updateOutputValue(const Value& input) {
  const Table& items = input.table(where("updateOutput"));
  const auto [begin, end] = window(items, "updateOutput");
  outputValue =
      Table(items.begin() + static_cast<std::ptrdiff_t>(begin), items.begin() + static_cast<std::ptrdiff_t>(end));
  return outputValue;
}

const Value& NarrowTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const Table& items = input.table(where("updateGradInput"));
  const auto [begin, end] = window(items, "updateGradInput");
  const Value inWindow =
      Table(items.begin() + static_cast<std::ptrdiff_t>(begin), items.begin() + static_cast<std::ptrdiff_t>(end));
  check_grad_structure(where("updateGradInput"), inWindow, gradOutput);
  Table grads(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    grads[i] = i >= begin && i < end ? gradOutput[i - begin] : zeros_like(items[i]);
  gradInputValue = std::move(grads);
  return gradInputValue;
}

std::string NarrowTable::str() const {
  return type_name() + "(" + std::to_string(offset) + ", " + std::to_string(length) + ")";
}

tensor::Json NarrowTable::config() const { return tensor::Json::Object{{"offset", offset}, {"length", length}}; }

ModulePtr NarrowTable::fromConfig(const tensor::Json& config) {
  ConfigReader r(config, kTypeName);
  const int64_t offset = r.integer("offset");
  const int64_t length = r.integer("length", 1);
  r.finish();
  return std::make_shared<NarrowTable>(offset, length);
}

}  // namespace nn
