// FashionMnist.h: reads the Fashion-MNIST idx files (gzip, as Debian's dataset-fashion-mnist
// installs them in /usr/share/datasets/fashion-mnist, or plain). Images become float32
// [N x 1 x 28 x 28] scaled to [0, 1] (then standardised with the training set's mean and
// std), labels Int64 [N] with classes 0..9.
#pragma once

#include <string>

#include "tensor/Tensor.h"

namespace samples {

struct Dataset {
  tensor::Tensor images;  // [N x 1 x 28 x 28] float32
  tensor::Tensor labels;  // [N] int64
};

inline const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline const char* kFashionMnistClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                               "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// `split` is "train" or "t10k". Throws std::runtime_error naming the missing file and how
// to get it.
Dataset load_fashion_mnist(const std::string& dir, const std::string& split);

}  // namespace samples
