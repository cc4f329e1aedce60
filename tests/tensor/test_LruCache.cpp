// test_LruCache.cpp: the bounded map behind the convolution plan cache (tensor/LruCache.h):
// lookups refresh, the least recently used entry goes first, capacity changes trim at once,
// 0 means unbounded, and a value's lifetime ends with its entry.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "tensor/LruCache.h"

using tensor::LruCache;

TEST_CASE("LruCache: find refreshes, put evicts the least recently used, replacing refreshes too") {
  LruCache<int, std::string> c(2);
  c.put(1, "one");
  c.put(2, "two");
  REQUIRE(c.find(1) != nullptr);  // 1 is now newer than 2
  c.put(3, "three");              // over capacity: 2 goes
  CHECK(c.size() == 2);
  CHECK(c.find(2) == nullptr);
  CHECK(*c.find(1) == "one");
  CHECK(*c.find(3) == "three");
  CHECK(c.evictions() == 1);
  c.put(1, "uno");  // replaces and refreshes: 3 is now the oldest
  c.put(4, "four");
  CHECK(c.find(3) == nullptr);
  CHECK(*c.find(1) == "uno");
  CHECK(*c.find(4) == "four");
  CHECK(c.evictions() == 2);
  CHECK(c.find(99) == nullptr);
}

TEST_CASE("LruCache: capacity 0 is unbounded; a smaller capacity trims the oldest at once; clear empties") {
  LruCache<int, int> c;
  for (int i = 0; i < 1000; ++i) c.put(i, i * i);
  CHECK(c.size() == 1000);
  CHECK(c.evictions() == 0);
  for (int i = 0; i < 10; ++i) c.find(i);  // 0..9 are now the newest
  c.set_capacity(10);
  CHECK(c.capacity() == 10);
  CHECK(c.size() == 10);
  for (int i = 0; i < 10; ++i) {
    REQUIRE(c.find(i) != nullptr);
    CHECK(*c.find(i) == i * i);
  }
  CHECK(c.find(10) == nullptr);
  CHECK(c.evictions() == 990);
  c.clear();
  CHECK(c.size() == 0);
  CHECK(c.find(0) == nullptr);
}

TEST_CASE("LruCache: an evicted value is destroyed, a value still shared elsewhere lives on") {
  LruCache<std::string, std::shared_ptr<int>> c(1);
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> dropped;
  {
    auto only = std::make_shared<int>(8);
    dropped = only;
    c.put("a", only);
  }
  c.put("b", held);  // "a" goes, and with it the last owner of 8
  CHECK(dropped.expired());
  c.put("c", std::make_shared<int>(9));  // "b" goes; `held` keeps 7 (as a pass keeps its engine)
  CHECK(held.use_count() == 1);
  CHECK(*held == 7);
}

TEST_CASE("LruCache: erase forgets one key (an RNN plan cuDNN refused) and keeps the rest in order") {
  LruCache<int, std::unique_ptr<int>> c(3);
  for (int i = 0; i < 3; ++i) c.put(i, std::make_unique<int>(i));
  c.erase(1);
  c.erase(7);  // absent: nothing happens
  CHECK(c.size() == 2);
  CHECK(c.find(1) == nullptr);
  c.put(3, std::make_unique<int>(3));  // room for it: nothing evicted
  CHECK(c.evictions() == 0);
  c.put(4, std::make_unique<int>(4));  // full: 0, the least recently used, goes
  CHECK(c.find(0) == nullptr);
  REQUIRE(c.find(2) != nullptr);
  CHECK(**c.find(2) == 2);
}
