// Idx.h: the IDX files of MNIST and Fashion-MNIST (LeCun's format), plain or gzip-compressed
// as Debian's dataset-fashion-mnist installs them. An IDX file is a magic number (two zero
// bytes, a type code, the number of dimensions), the dimensions as big-endian uint32, then
// the elements, big-endian, row-major. Errors are tensor::Error naming the function and the
// file: a missing file, a gzip stream that is corrupt or cut short, a bad magic number, an
// unknown type code, and data shorter or longer than the dimensions say.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tensor/Tensor.h"
#include "train/Data.h"

namespace nn {

// The tensor an IDX file holds, by its type code: 0x08 (unsigned byte) as UInt8, 0x09
// (signed byte), 0x0B (int16) and 0x0C (int32) as Int64, 0x0D (float32) as Float32 and 0x0E
// (float64) as Float64; its shape the file's dimensions.
Tensor load_idx(const std::string& path);

// MNIST's layout of a directory: <split>-images-idx3-ubyte and <split>-labels-idx1-ubyte,
// each with or without .gz ("train" or "t10k" for MNIST and Fashion-MNIST). A TensorDataset of
// the images, float32 [N x 1 x H x W] scaled to [0, 1], and the labels, Int64 [N], checked to
// lie in [0, classes) (classes <= 0: not checked).
std::shared_ptr<TensorDataset> load_mnist(const std::string& dir, const std::string& split, int64_t classes = 10);

// The directory Debian's dataset-fashion-mnist installs, and Fashion-MNIST's class names.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kFashionMnistClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

}  // namespace nn
