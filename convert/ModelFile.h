// ModelFile.h: model files. save_model(net, "runs/lenet") writes two files:
//   runs/lenet.json         the structure: every module's type, mode and config(), nested as
//                           the containers are (readable, indented; format below)
//   runs/lenet.safetensors  stateDict(): parameters and buffers keyed by module path
//                           ("0.weight", "3.running_mean"), metadata {"format": "cudnn-nn model"}
// and load_model("runs/lenet") rebuilds the trained network from them. The weights file is
// plain safetensors with PyTorch's key convention, so save_weights/load_weights exchange
// parameters with other libraries (a torch.nn.Sequential's state_dict has the same keys
// when the module order matches).
//
// The JSON document:
//   {"format": "cudnn-nn model", "version": 1,
//    "module": {"type": "nn.Sequential", "training": true, "config": {},
//               "children": [{"type": "nn.SpatialConvolution", "training": true,
//                             "config": {"nInputPlane": 1, "nOutputPlane": 4, "kW": 3, ...}}, ...]}}
// "children" appears on containers only, in their order (Residual: block, then shortcut).
//
// Backends. A module saves under its own type name, "nn.X" or "cudnn.X" (a twin has the
// same config and state as its nn module). load_model builds "cudnn.X" as nn.X and turns it
// into its twin through convert's table (ConvertTable.cpp) WITHOUT moving it to a GPU: the
// loaded network is on the CPU, so convert(net, nn::backend) works on a machine without a
// GPU, and net->to(tensor::Device::cuda(0)) puts a cudnn model on the GPU. Where the build
// has no twin for X (a build without cuDNN, or a twin not written yet), "cudnn.X" loads as
// nn.X and load_model prints one warning naming those modules: the numbers are the same,
// only the backend differs.
//
// load_model also restores each module's training/evaluation mode and dtype: a module whose
// tensors in the file share one floating dtype other than float32 is cast to it (a float64
// network comes back float64; a float16 cudnn network keeps its float32 batch-norm statistics).
// Weights are loaded strictly: a missing, unexpected or wrongly shaped tensor is an error
// listing every mismatch (Module::loadStateDict).
//
// Types. ModelTypes.cpp lists every nn module (type name -> X::fromConfig). A module of any
// other type (a user's own) makes save_model throw, naming its path and type, unless its
// type was registered with register_model_type(name, factory) (then its config() override
// is saved and the factory gets it back); load_model throws for an unknown type, naming it
// and its path.
//
// Adding an option to a module (a field that changes behaviour, cudnn-only ones included: they
// must be FIELDS OF THE nn CLASS, as ConvolutionBase::algo is, so the twin inherits them and
// convert() and model files keep them):
//   1. write it in that nn class's config() (X.cpp; for a field of a shared base, next to the
//      base's other keys, as ConvAlgorithms::config() is written under "algo" by each
//      convolution);
//   2. read it in X::fromConfig with ConfigReader and a fallback equal to the field's default
//      (c.flag("fastMode", false)), so files written before the option existed still load;
//      every concrete class has its own fromConfig (a subclass's must set the field too);
//   3. give it a non-default value in the module's case in tests/convert/test_ModelFile.cpp
//      (all_cases()), and compare the field there if it changes nothing on the CPU.
// A config key that fromConfig does not read is an error at load (ConfigReader::finish), so
// a forgotten step 2 shows up in the round-trip test. The format version stays 1 as long as
// new keys have defaults. State kept only in a twin (cudnn::SoftMaxBase's fastMode today) is
// not saved: it is lost by convert() to nn as well.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/Module.h"
#include "tensor/Json.h"

namespace nn {

// `path` is the common stem ("runs/lenet"); a trailing ".json" or ".safetensors" is dropped.
// Throws before writing anything when a module's type is unknown.
void save_model(Module& net, const std::string& path);
ModulePtr load_model(const std::string& path);
// load_model from bytes already in memory: the JSON document and the safetensors file;
// `jsonWhat` and `weightsWhat` name them in errors (load_model passes the file names).
ModulePtr load_model(const std::string& json, const uint8_t* weights, size_t size, const std::string& jsonWhat,
                     const std::string& weightsWhat);

// The weights alone, to or from exactly `path` (a .safetensors file), into an existing
// network (strict, as load_model).
// load_weights also reads NumPy .npz archives (np.savez(path, **state_dict), by extension).
void save_weights(Module& net, const std::string& path);
void load_weights(Module& net, const std::string& path);

// load_weights with options (Note [Non-strict loading] in ModelFile.cpp): `mapKey` renames the
// file's keys to the network's ("module.0.weight" -> "0.weight"; "" drops a tensor); with
// strict false every tensor whose name, shape and kind match loads and the rest is reported.
struct LoadWeightsOptions {
  bool strict = true;
  std::function<std::string(const std::string&)> mapKey{};  // empty: keys as they are
};
struct WeightsReport {
  std::vector<std::string> loaded;      // network names, sorted
  std::vector<std::string> missing;     // in the network, not in the file
  std::vector<std::string> unexpected;  // in the file (after mapping), not in the network
  std::vector<std::string> mismatched;  // "name: file float32 [3 x 4] on cpu, network float32 [4 x 4] on cpu"
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};
WeightsReport load_weights(Module& net, const std::string& path, const LoadWeightsOptions& options);

// The structure alone: the JSON document save_model writes, and the network it describes
// with freshly initialised parameters (modes restored, no weights). `what` names the source
// in errors. A document is untrusted (Note [Untrusted model files] in ModelFile.cpp) and has
// no weights file to bound it, so the build may allocate at most `maxBytes` (parameters,
// gradients and buffers together; 4 GiB by default, about 500M float32 parameters with
// their gradients): past it, tensor::AllocationLimitExceeded names `what` and the bound.
inline constexpr size_t kBuildModelBytes = size_t{1} << 32;
tensor::Json describe_model(Module& net);
ModulePtr build_model(const tensor::Json& document, const std::string& what = "model",
                      size_t maxBytes = kBuildModelBytes);

// Rebuilds a module of a type model files do not know from the config() it saved and its
// children (empty for a leaf), in order.
using ModelFactory = std::function<ModulePtr(const tensor::Json& config, std::vector<ModulePtr> children)>;
using LeafModelFactory = std::function<ModulePtr(const tensor::Json& config)>;
// Registers (or replaces) a user's type; the built-in names ("nn.X", "cudnn.X") cannot be
// taken. The module's type_name() must be `type`.
void register_model_type(const std::string& type, ModelFactory factory);
void register_model_type(const std::string& type, LeafModelFactory factory);  // a leaf: no children

// Every type load_model knows, sorted: the built-in nn types and the registered ones.
std::vector<std::string> model_types();

}  // namespace nn
