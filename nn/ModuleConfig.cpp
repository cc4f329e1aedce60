// ModuleConfig.cpp
#include "nn/ModuleConfig.h"

namespace nn {

namespace {
thread_local bool validating = false;
}

ConfigValidation::ConfigValidation() : outer_(validating) { validating = true; }
ConfigValidation::~ConfigValidation() { validating = outer_; }
bool ConfigValidation::active() { return validating; }

ConfigReader::ConfigReader(const tensor::Json& config, std::string_view type)
    : ConfigReader(config, std::string(type) + " config", Nested{}) {
  top_ = true;
}

ConfigReader::ConfigReader(const tensor::Json& config, std::string what, Nested)
    : config_(config), what_(std::move(what)) {
  config_.as_object(what_);
}

const tensor::Json* ConfigReader::get(const std::string& key, bool required) {
  read_.insert(key);
  return required ? &config_.at(key, what_) : config_.find(key);
}

const tensor::Json::Array& ConfigReader::array(const std::string& key) { return get(key, true)->as_array(what(key)); }

int64_t ConfigReader::integer(const std::string& key) { return get(key, true)->as_int(what(key)); }
double ConfigReader::number(const std::string& key) { return get(key, true)->as_number(what(key)); }
bool ConfigReader::flag(const std::string& key) { return get(key, true)->as_bool(what(key)); }

tensor::Shape ConfigReader::shape(const std::string& key) {
  tensor::Shape out;
  const auto& items = get(key, true)->as_array(what(key));
  for (size_t i = 0; i < items.size(); ++i) out.push_back(items[i].as_int(what(key) + "[" + std::to_string(i) + "]"));
  return out;
}

int64_t ConfigReader::integer(const std::string& key, int64_t fallback) {
  const tensor::Json* v = get(key, false);
  return v ? v->as_int(what(key)) : fallback;
}

double ConfigReader::number(const std::string& key, double fallback) {
  const tensor::Json* v = get(key, false);
  return v ? v->as_number(what(key)) : fallback;
}

bool ConfigReader::flag(const std::string& key, bool fallback) {
  const tensor::Json* v = get(key, false);
  return v ? v->as_bool(what(key)) : fallback;
}

std::optional<int64_t> ConfigReader::optionalInteger(const std::string& key) {
  const tensor::Json* v = get(key, false);
  if (!v || v->is_null()) return std::nullopt;
  return v->as_int(what(key));
}

std::optional<bool> ConfigReader::optionalFlag(const std::string& key) {
  const tensor::Json* v = get(key, false);
  if (!v || v->is_null()) return std::nullopt;
  return v->as_bool(what(key));
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) {
  const tensor::Json* v = get(key, false);
  return v ? v->as_string(what(key)) : fallback;
}

ConfigReader ConfigReader::object(const std::string& key) {
  const tensor::Json* v = get(key, false);
  return ConfigReader(v ? *v : tensor::Json(tensor::Json::Object{}), what(key), Nested{});
}

void ConfigReader::finish() const {
  std::string unknown, known;
  size_t n = 0;
  for (const auto& [key, _] : config_.as_object(what_)) {
    if (!read_.count(key)) unknown += (n++ ? ", '" : "'") + key + "'";
  }
  if (n == 0) {
    if (top_ && validating) throw ConfigValid{};
    return;
  }
  for (const auto& key : read_) known += (known.empty() ? "" : ", ") + key;
  throw tensor::Error(what_ + ": unknown key" + (n > 1 ? "s " : " ") + unknown + " (" +
                      (known.empty() ? std::string("it takes none") : "it takes " + known) + ")");
}

}  // namespace nn
