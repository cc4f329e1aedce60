// Checkpoint.h: one file holding everything a training run needs to go on: the model's state,
// the optimizer's (per-parameter state and every group's lr), the schedule's, the loss
// scaler's, the random generator's (seed and offset: tensor's one counter-based Generator
// serves the CPU and every GPU, Note [Counter-based randomness]), epoch, step, and the data
// loader's position (Note [Loader positions] in train/Data.h).
// Note [Checkpoint files]: `dir`/checkpoint.safetensors, tensors "model.<key>" and
// "optimizer.<key>", the rest as JSON in the safetensors metadata. Written through
// tensor::save_safetensors (temp file + fsync + rename, tensor/FileIO.h, as model files are),
// so a crash mid-save leaves the previous checkpoint whole. Loading checks everything first —
// the format, the world size, the model's names and shapes, the optimizer's type and parameter
// count, each component present — and only then changes anything: a checkpoint of another
// network, a truncated file or a different world size is an error naming the file and what
// differs, and leaves the training objects as they were.
// Resuming on the same backend and machine gives the same bits as a run that never stopped
// (tests/train/test_Checkpoint.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "nn/GradScaler.h"
#include "nn/LRScheduler.h"
#include "nn/Module.h"
#include "nn/Optimizer.h"
#include "train/Data.h"

namespace nn {

// What a checkpoint saves and restores; null pointers are not saved (and must be null when
// loading a checkpoint without them, and set when it has them).
struct TrainingState {
  Module* model = nullptr;
  Optimizer* optimizer = nullptr;
  LRScheduler* scheduler = nullptr;
  ReduceLROnPlateau* plateau = nullptr;
  GradScaler* scaler = nullptr;
  DataLoader* loader = nullptr;
  int64_t epoch = 0, step = 0;
  int64_t worldSize = 1;
};

// The file a checkpoint directory holds.
std::string checkpoint_file(const std::string& dir);
// Creates `dir` if needed and writes the checkpoint atomically.
void save_checkpoint(const std::string& dir, const TrainingState& state);
// Restores `state` from `dir`'s checkpoint (model, optimizer, ... in place; epoch and step
// assigned); the generator is restored too.
void load_checkpoint(const std::string& dir, TrainingState& state);

}  // namespace nn
