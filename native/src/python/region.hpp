// One store mapped by a pager, seen from Python as a flat buffer of bytes. The region owns the
// mapping: it holds its pager alive and unmaps (writing back every dirty page) when destroyed, which
// Python does only once no array, view or memoryview uses the buffer any more.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>

#include "autopager/pager.hpp"
#include "autopager/store.hpp"

namespace autopager::python {

class Region {
 public:
  // Maps `length` bytes of `store`; read-only unless `writable`.
  Region(std::shared_ptr<Pager> pager, std::shared_ptr<Store> store, std::size_t length, bool writable);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // Writes back this region's dirty pages; throws std::system_error when a write failed.
  void flush();

  void* data() const { return data_; }
  std::size_t length() const { return length_; }
  bool writable() const { return writable_; }
  const std::shared_ptr<Pager>& pager() const { return pager_; }
  pybind11::buffer_info buffer() const;

 private:
  std::shared_ptr<Pager> pager_;
  void* data_ = nullptr;
  std::size_t length_ = 0;
  bool writable_ = false;
};

}  // namespace autopager::python
