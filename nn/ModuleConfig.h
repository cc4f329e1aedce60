// ModuleConfig.h: reading a module's config() back in its fromConfig() (see Module::config
// and convert/ModelFile.h). Typed access to the keys, with errors naming the module type
// and the key ("nn.Linear config: missing key 'inputSize'"), defaults for options that an
// older file may lack, and a last check that every key was read: a misspelt or unknown
// option is an error, never silently ignored.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "tensor/Json.h"
#include "tensor/Tensor.h"

namespace nn {

// Thrown by a module's top-level ConfigReader::finish() inside a ConfigValidation scope, once
// every key checked out: fromConfig reads and checks all keys before constructing anything,
// so this stops it before it allocates. nn::load_model validates a whole model file this
// way before building any of it (Note [Untrusted model files] in convert/ModelFile.cpp).
// Not a std::exception, so that no `catch (const std::exception&)` takes it for an error.
struct ConfigValid {};

class ConfigValidation {
 public:
  ConfigValidation();
  ~ConfigValidation();
  ConfigValidation(const ConfigValidation&) = delete;
  ConfigValidation& operator=(const ConfigValidation&) = delete;
  static bool active();

 private:
  bool outer_;
};

class ConfigReader {
 public:
  // `type` names the module in errors ("nn.Linear"); config must be a JSON object.
  ConfigReader(const tensor::Json& config, std::string_view type);

  // Required keys.
  int64_t integer(const std::string& key);
  double number(const std::string& key);
  bool flag(const std::string& key);
  tensor::Shape shape(const std::string& key);  // an array of integers
  // Options: the fallback (the constructor's default) when the key is absent.
  int64_t integer(const std::string& key, int64_t fallback);
  double number(const std::string& key, double fallback);
  bool flag(const std::string& key, bool fallback);
  // Options whose "unset" state is written as null (or left out).
  std::optional<int64_t> optionalInteger(const std::string& key);
  std::optional<bool> optionalFlag(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);
  // A nested object (empty when absent), read the same way ("nn.X config.key" in errors);
  // finish() it too.
  ConfigReader object(const std::string& key);
  // A required array, as it is (nn::Graph's wiring); `what` of an entry is what(key) + "[i]".
  const tensor::Json::Array& array(const std::string& key);
  std::string describe(const std::string& key) const { return what(key); }

  // Throws naming every key that was not read (unknown to this module type); inside a
  // ConfigValidation scope, a module's reader then throws ConfigValid.
  void finish() const;

 private:
  struct Nested {};
  ConfigReader(const tensor::Json& config, std::string what, Nested);
  const tensor::Json* get(const std::string& key, bool required);
  std::string what(const std::string& key) const { return what_ + "." + key; }

  tensor::Json config_;
  std::string what_;  // "nn.Linear config"
  std::set<std::string> read_;
  bool top_ = false;  // a module's reader, not object()'s
};

}  // namespace nn
