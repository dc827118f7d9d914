// numpy.memmap's mode "c": a store that reads a base store and keeps every write in a scratch overlay,
// so written pages survive eviction and re-reading but never reach the base (its file is opened
// read-only). The overlay remembers which byte ranges it holds; reads take those from the overlay.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "autopager/store.hpp"
#include "scratch_store.hpp"

namespace autopager::python {

class CopyOnWriteStore : public Store {
 public:
  // The overlay is a scratch file in `scratch_directory`, as large as `base`.
  CopyOnWriteStore(std::shared_ptr<Store> base, const std::string& scratch_directory);

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override;
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override;
  std::uint64_t size() const override { return base_->size(); }
  // The byte ranges [begin, end) written so far, in order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> written_ranges() const;
  bool outlives_process() const override { return false; }  // its writes live in the scratch overlay
  bool direct_io() const override { return base_->direct_io(); }  // the file's reads; it is never written

 private:
  void remember_written(std::uint64_t begin, std::uint64_t end);

  std::shared_ptr<Store> base_;
  ScratchStore overlay_;
  mutable std::shared_mutex written_mutex_;
  std::map<std::uint64_t, std::uint64_t> written_;  // begin -> end of disjoint, non-touching ranges
};

}  // namespace autopager::python
