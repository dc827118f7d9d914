// A store on an anonymous scratch file: created unlinked in a directory, sparse, gone when the store is.
// Backs arrays that only live while the process does (autopager.empty) and copy-on-write overlays.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autopager/store.hpp"

namespace autopager::python {

class ScratchStore : public Store {
 public:
  // Creates an unlinked file of `size` bytes (all zero) in `directory`; throws std::system_error
  // naming the directory when it cannot.
  ScratchStore(const std::string& directory, std::uint64_t size);
  ~ScratchStore() override;
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override;
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override;
  std::uint64_t size() const override { return size_; }
  bool outlives_process() const override { return false; }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace autopager::python
