// A vector of a few ids that keeps up to N of them inside itself: the lists of a Task (its
// dependencies, a kernel's inputs and outputs, a collective's buffers; shared/schedule.h).
//
// Why: a class program of the 530B search's best point has 4.2 M tasks, and 99.9 % of their
// dependency lists and 94 % of their kernels' operand lists hold at most two ids. As std::vectors
// they were three heap blocks a task (32 bytes each) and 24 bytes each in the Task; here the
// common list is 16 bytes in the Task and no heap block (docs/search.md "Session 15: the
// simulations' speed"). A longer list lives on the heap as a vector's would.
//
// It reads and writes as the std::vector it replaces: iteration, size, indexing, push_back,
// assign; it converts from and to std::vector<T> and compares with one, so that code written for
// std::vector (generators, readers, tests) keeps working.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace tandem {

template <typename T, uint32_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "InlineVector holds plain ids");
  static_assert(N > 0 && sizeof(T) * N <= sizeof(T*), "InlineVector: the inline ids share the pointer's bytes");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> list) { assign(list.begin(), list.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  InlineVector(It first, It last) {
    assign(first, last);
  }
  InlineVector(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: converts as a vector copies
  InlineVector(const InlineVector& o) { assign(o.begin(), o.end()); }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  ~InlineVector() { release(); }

  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> list) {
    assign(list.begin(), list.end());
    return *this;
  }
  InlineVector& operator=(const std::vector<T>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT

  template <typename It>
  void assign(It first, It last) {
    const size_t n = size_t(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = uint32_t(n);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return on_heap() ? cap_ : N; }
  T* data() { return on_heap() ? u_.heap : u_.inline_ids; }
  const T* data() const { return on_heap() ? u_.heap : u_.inline_ids; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("InlineVector::at");
    return data()[i];
  }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(T v) {
    if (size_ == capacity()) reserve(size_t(size_) * 2);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = uint32_t(n);
  }
  // Keeps the ids; grows the heap block to at least n (a list never moves back inline).
  void reserve(size_t n) {
    if (n <= capacity()) return;
    if (n > UINT32_MAX) throw std::length_error("InlineVector: more than 2^32 ids");
    T* block = new T[n];
    if (size_) std::memcpy(block, data(), size_ * sizeof(T));
    release();
    u_.heap = block;
    cap_ = uint32_t(n);
  }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const InlineVector& a, const InlineVector& b) { return !(a == b); }
  friend bool operator==(const InlineVector& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const std::vector<T>& a, const InlineVector& b) { return b == a; }
  friend bool operator!=(const InlineVector& a, const std::vector<T>& b) { return !(a == b); }
  friend bool operator!=(const std::vector<T>& a, const InlineVector& b) { return !(b == a); }

 private:
  bool on_heap() const { return cap_ != 0; }
  void release() {
    if (on_heap()) delete[] u_.heap;
    cap_ = 0;
  }
  // Moves o's ids here (this holds none) and leaves o empty and inline.
  void take(InlineVector& o) {
    size_ = o.size_;
    cap_ = o.cap_;
    u_ = o.u_;
    o.size_ = 0;
    o.cap_ = 0;
  }

  uint32_t size_ = 0;
  uint32_t cap_ = 0;  // 0: the ids are inline; else the heap block's size
  union Ids {
    T inline_ids[N];
    T* heap;
  } u_{};
};

}  // namespace tandem
