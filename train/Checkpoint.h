// Checkpoint.h: one file holding everything a training run needs to go on: the model's state,
// the optimizer's (per-parameter state and every group's lr), the schedule's, the loss
// scaler's, the random generator's (seed and offset: tensor's one counter-based Generator
// serves the CPU and every GPU, Note [Counter-based randomness]), epoch, step, and the data
// loader's position (Note [Loader positions] in train/Data.h).
// Note [Checkpoint files]: `dir`/checkpoint.safetensors (or a file named: checkpoint_file),
// tensors "model.<key>" and "optimizer.<key>", the rest as JSON in the safetensors metadata. Written through
// tensor::save_safetensors (temp file + fsync + rename, tensor/FileIO.h, as model files are),
// so a crash mid-save leaves the previous checkpoint whole. Loading checks everything first —
// the format and version, the world size, the model's names and shapes, the optimizer's type,
// parameter count, groups and state (Optimizer::checkStateDict), each component present with
// the keys its state has, every number parsed whole and in the range its component's setters
// accept (an lr finite and >= 0, a loss scale finite and > 0, counters integers >= 0) — and only
// then changes anything: a checkpoint of another network, a truncated file, a different world
// size or a value out of range is an error naming the file and the entry ("metadata
// 'optimizer.groups': expected a finite 'lr.0' >= 0, got -1"), and leaves the training objects
// as they were. The one check left to a load is a schedule's closed form at the saved epoch
// (OneCycleLR past its total): the schedule loads first, and its load changes nothing when it
// throws.
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

// The checkpoint file `path` names: `path`/checkpoint.safetensors for a directory (or a path that
// does not exist and does not end in ".safetensors"), else `path` itself (an existing file, or a
// new one ending in ".safetensors"), as torch.save and torch.load take a file.
std::string checkpoint_file(const std::string& path);
// Writes the checkpoint atomically to checkpoint_file(path), creating the directories it needs:
// save_checkpoint("run") writes run/checkpoint.safetensors, save_checkpoint("run/ep3.safetensors")
// that file (an existing file `path` is replaced).
void save_checkpoint(const std::string& path, const TrainingState& state);
// Restores `state` from checkpoint_file(path) (a checkpoint directory or the file itself): model,
// optimizer, ... in place; epoch and step assigned; the generator is restored too.
void load_checkpoint(const std::string& path, TrainingState& state);

}  // namespace nn
