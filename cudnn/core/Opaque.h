// core/Opaque.h: the constructor and destructor of cudnn::detail::Opaque<T> (cudnn/Opaque.h),
// for the .cpp that owns T to instantiate after T's definition:
//   template class cudnn::detail::Opaque<cudnn::LRNPlan>;
#pragma once

#include <memory>

#include "cudnn/Opaque.h"

namespace cudnn::detail {

template <class T>
Opaque<T>::Opaque() : p_(std::make_unique<T>()) {}

template <class T>
Opaque<T>::~Opaque() = default;

}  // namespace cudnn::detail
