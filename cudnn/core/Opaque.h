// core/Opaque.h: the special members of cudnn::detail::Opaque<T> (cudnn/Opaque.h),
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

template <class T>
Opaque<T>::Opaque(Opaque&&) noexcept = default;

template <class T>
Opaque<T>& Opaque<T>::operator=(Opaque&&) noexcept = default;

}  // namespace cudnn::detail
