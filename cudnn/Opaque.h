// Opaque.h: cudnn::detail::Opaque<T>, a T that an installed header holds without T's
// definition. T is a plan of cudnn/ops/ (not installed: it names cuDNN's types); Opaque<T>
// owns one through a pointer. Its constructors, destructor and move assignment are defined in
// cudnn/core/Opaque.h and instantiated, once, in the .cpp that owns T (`template class
// cudnn::detail::Opaque<T>;`), so a class that keeps a plan (a twin, a family's compute, a
// plan's own Impl) needs no cuDNN header and no out-of-line special members of its own: it is
// movable, not copyable, by the rule of zero. See Note [Sealed headers] in docs/architecture.md.
#pragma once

#include <memory>

namespace cudnn::detail {

template <class T>
class Opaque {
 public:
  Opaque();  // a default-constructed T
  ~Opaque();
  Opaque(Opaque&&) noexcept;  // leaves the source empty, as a moved-from std::unique_ptr
  Opaque& operator=(Opaque&&) noexcept;

  T& operator*() const { return *p_; }
  T* operator->() const { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace cudnn::detail
