// Opaque.h: cudnn::detail::Opaque<T>, a T that an installed header holds without T's
// definition. T is a plan of cudnn/ops/ (not installed: it names cuDNN's types); Opaque<T>
// owns one through a pointer. Its constructor and destructor are defined in cudnn/core/Opaque.h
// and instantiated, once, in the .cpp that owns T (`template class cudnn::detail::Opaque<T>;`),
// so a twin that keeps a plan needs no cuDNN header and no out-of-line special members of its
// own. See Note [Sealed headers] in docs/architecture.md.
#pragma once

#include <memory>

namespace cudnn::detail {

template <class T>
class Opaque {
 public:
  Opaque();  // a default-constructed T
  ~Opaque();
  Opaque(const Opaque&) = delete;
  Opaque& operator=(const Opaque&) = delete;

  T& operator*() const { return *p_; }
  T* operator->() const { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace cudnn::detail
