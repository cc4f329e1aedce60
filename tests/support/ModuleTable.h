// ModuleTable.h: one row per nn module type (PyTorch's OpInfo, for this framework): how to build
// it, an input it takes, and what it accepts and refuses (rank, plane count, empty batches).
// The bad-input matrix walks it on both backends (tests/nn/test_BadInput.cpp on the CPU,
// tests/cudnn/test_BadInput.cpp on the GPU, where each row's twin comes from nn::convert), and a
// test checks that every built-in model type has a row. A new module is one row here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/Module.h"
#include "tests/support/NonContiguous.h"  // noncontiguous_copy, for the matrix

namespace testing {

struct ModuleSpec {
  std::string type;                     // "SpatialConvolution": the module prints "nn.SpatialConvolution"
  std::function<nn::ModulePtr()> make;  // float32 on the CPU; call tensor::manual_seed first to repeat it
  tensor::Shape input;                  // an input it takes, with a batch of 2
  int64_t batchDim = 0;                 // where the batch is, in the input and in the output
  int64_t planeDim = -1;                // the input size it checks against its configuration (-1: none)
  tensor::Shape wrongRank = {};         // an input of a rank it refuses ({}: every rank is taken)
  bool stochastic = false;              // draws random numbers in training (compared in evaluate mode)
  // Moves elements without computing (Identity, Reshape, Select, View): takes every dtype, as
  // Torch's do, and hands an integer input through unchanged instead of refusing it.
  bool anyDtype = false;
  // A container whose first child sees the input reshaped (SpatialTransformer's localisation
  // network): a wrong plane count is that child's error, naming the child's input, after the
  // container's "In 1 module of nn.X:" prefix.
  bool childSeesOtherShape = false;
  // An input that is NaN everywhere gives an output that is NaN everywhere (Note [NaN and Inf]);
  // false where some outputs do not read the input (the constant paddings: Padding,
  // SpatialZeroPadding).
  bool nanEverywhere = true;
  // backward after a forward in evaluation mode (false for the recurrent types: backward needs
  // a training forward's saved state, as cuDNN's reserve space is kept only in training)
  bool backwardInEvaluation = true;
  // Takes int64 indices, not floating data (Embedding): `input` is the indices' shape, drawn in
  // [0, 2); the matrix's floating-input checks skip the row, and its own suite covers them.
  bool indexInput = false;
  // The matrix draws inputs in [inputLow, 1]: above 0 where a negative input gives NaN (Log,
  // Sqrt), so that its value comparisons compare numbers.
  double inputLow = -1;
};

const std::vector<ModuleSpec>& module_table();

// The row of nn type `type` ("SpatialConvolution"), or nullptr.
const ModuleSpec* find_spec(const std::string& type);

// The types whose input or output is a table (nn/TableModule.h, ConcatTable, ParallelTable,
// Graph): the matrix feeds tensors, so tests/nn/test_Tables.cpp and test_Graph.cpp check them
// instead, and the table needs no row for them.
bool is_table_module_type(const std::string& type);

// `shape` with size `n` at `dim`.
tensor::Shape with_size(tensor::Shape shape, int64_t dim, int64_t n);

// A parameter's value and gradient fields, reached through the module that holds them, so
// that a test can replace them as a user can (Note [Parameters are checked where they are
// used] in nn/Buffers.h). `owner` is that module's type name ("nn.Linear", "cudnn.LSTM").
struct ParameterSlot {
  std::string owner, name;
  tensor::Tensor* value;
  tensor::Tensor* grad;
};
// Every parameter of m's tree, through the families that hold parameters (Linear, the
// convolutions, TemporalConvolution, the batch norms, the recurrent modules, Embedding, LayerNorm,
// GroupNorm and InstanceNorm, MultiheadAttention; twins included).
// A module type with parameters outside them is missing here: callers compare the count with
// namedParameters() so that such a type fails their test until it is added.
std::vector<ParameterSlot> parameter_slots(nn::Module& m);

}  // namespace testing
