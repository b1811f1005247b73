// A vector of trivially copyable elements that is either owned memory (while
// a reader fills it) or a view of a mapped snapshot file (issue 16). Trace's
// event array and sparse id table are such vectors.
//
// A snapshot load maps the file and uses its bytes in place: no copy,
// and no first-touch zeroing of a fresh allocation (on the VMs we measure, a
// fresh 4 KiB page costs ~3 µs, more than the copy). The view keeps the
// mapping alive through a shared owner. The mapping is private (copy on
// write), so writing an element of a view changes this process's copy only;
// growing a view (push_back, reserve, resize, clear) first copies it into
// owned memory, and copying a store always gives an owned, independent copy,
// so the store keeps std::vector's value semantics.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/huge_pages.h"

namespace jarvis {

template <class T>
class MappableVector {
  static_assert(std::is_trivially_copyable_v<T>, "views hold raw file bytes");

 public:
  MappableVector() = default;
  MappableVector(const MappableVector& other) : owned_(other.begin(), other.end()) { sync(); }
  MappableVector(MappableVector&& other) noexcept { take(std::move(other)); }
  MappableVector& operator=(const MappableVector& other) {
    if (this != &other) {
      owned_.assign(other.begin(), other.end());
      mapping_.reset();
      sync();
    }
    return *this;
  }
  MappableVector& operator=(MappableVector&& other) noexcept {
    if (this != &other) take(std::move(other));
    return *this;
  }

  // A view of `count` elements at `data`, which `owner` keeps alive.
  static MappableVector view(std::shared_ptr<void> owner, T* data, size_t count) {
    MappableVector s;
    s.mapping_ = std::move(owner);
    s.data_ = data;
    s.size_ = count;
    return s;
  }
  // True while the elements are read in place from a mapped file.
  bool is_view() const { return mapping_ != nullptr; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return is_view() ? size_ : owned_.capacity(); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& e) {
    own();
    owned_.push_back(e);
    sync();
  }
  void reserve(size_t n) {
    own();
    owned_.reserve(n);
    sync();
  }
  void resize(size_t n) {
    own();
    owned_.resize(n);
    sync();
  }
  void assign(size_t n, const T& value) {
    own();
    owned_.assign(n, value);
    sync();
  }
  void append(const T* first, const T* last) {
    own();
    owned_.insert(owned_.end(), first, last);
    sync();
  }
  // Frees spare owned capacity (a view has none).
  void shrink_to_fit() {
    if (is_view()) return;
    owned_.shrink_to_fit();
    sync();
  }
  // Empties the vector, keeping owned capacity for reuse.
  void clear() {
    own();
    owned_.clear();
    sync();
  }

 private:
  // Copies a view into owned memory before it grows.
  void own() {
    if (!is_view()) return;
    owned_.assign(data_, data_ + size_);
    mapping_.reset();
  }
  void sync() {
    data_ = owned_.data();
    size_ = owned_.size();
  }
  void take(MappableVector&& other) {
    owned_ = std::move(other.owned_);
    mapping_ = std::move(other.mapping_);
    data_ = mapping_ ? other.data_ : owned_.data();
    size_ = mapping_ ? other.size_ : owned_.size();
    other.owned_.clear();
    other.mapping_.reset();
    other.sync();
  }

  // Large stores (the event array) sit on huge pages from their first touch.
  std::vector<T, HugePageAllocator<T>> owned_;
  std::shared_ptr<void> mapping_;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace jarvis
