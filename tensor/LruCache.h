// LruCache.h: a map with a bound on its entries that forgets the least recently used one
// when full. Used for caches keyed by shapes (the convolution algorithm and graph-plan cache,
// cudnn/ops/conv.cpp), which a network with ever-changing input sizes would otherwise grow
// without end. Not thread-safe: callers hold their own lock.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

namespace tensor {

template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class LruCache {
 public:
  // capacity 0: unbounded.
  explicit LruCache(size_t capacity = 0) : capacity_(capacity) {}

  // The value for `key` (now the most recently used), or nullptr. The pointer is valid until
  // the next put, set_capacity or clear.
  Value* find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces; the entry becomes the most recently used, and the least recently
  // used ones go while the cache is over capacity.
  Value& put(const Key& key, Value value) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->second = std::move(value);
      entries_.splice(entries_.begin(), entries_, it->second);
      return it->second->second;
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
    trim();
    return entries_.front().second;
  }

  // A new bound (0: unbounded); the least recently used entries beyond it go now.
  void set_capacity(size_t capacity) {
    capacity_ = capacity;
    trim();
  }

  // Forgets `key`'s entry, if any.
  void erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    entries_.erase(it->second);
    index_.erase(it);
  }

  size_t capacity() const { return capacity_; }
  size_t size() const { return index_.size(); }
  size_t evictions() const { return evictions_; }  // entries forgotten for capacity, ever
  void clear() {
    index_.clear();
    entries_.clear();
  }

 private:
  void trim() {
    while (capacity_ != 0 && index_.size() > capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
      ++evictions_;
    }
  }

  using Entries = std::list<std::pair<Key, Value>>;
  size_t capacity_;
  size_t evictions_ = 0;
  Entries entries_;  // most recently used first
  std::unordered_map<Key, typename Entries::iterator, Hash, Equal> index_;
};

}  // namespace tensor
