// What the application touches: a pager region or the kernel's mmap of the same file, behind one
// interface so that both run the same access loops.
#pragma once

#include <cstddef>
#include <memory>

#include "json_line.hpp"
#include "options.hpp"

namespace bench {

class Mapping {
 public:
  virtual ~Mapping() = default;
  char* base() const { return base_; }
  std::size_t length() const { return length_; }
  // Bytes one fault brings in: the pager's page size, or the unit the kernel mapping is touched in.
  std::size_t unit() const { return unit_; }
  // Asks for these pages ahead of their touch; returns without waiting for them.
  virtual void prefetch(char* const* pages, std::size_t count) = 0;
  // Adds the effective configuration and the backend's counters (read after the run) to `out`.
  virtual void describe(JsonLine& out) const = 0;

 protected:
  char* base_ = nullptr;
  std::size_t length_ = 0;
  std::size_t unit_ = 0;
};

std::unique_ptr<Mapping> make_pager_mapping(const Options& options);
std::unique_ptr<Mapping> make_kernel_mapping(const Options& options);

}  // namespace bench
