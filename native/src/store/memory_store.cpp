// Bytes in this process's memory, so that the pager's own cost can be measured without I/O.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "autopager/store.hpp"

namespace autopager {
namespace {

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::uint64_t size) : size_(size) {
    if (size_ == 0) return;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    bytes_ = static_cast<char*>(p);
  }
  ~MemoryStore() override {
    if (bytes_ != nullptr) munmap(bytes_, size_);
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    std::size_t count = clamp(n, offset);
    if (count > 0) std::memcpy(dst, bytes_ + offset, count);
    return static_cast<ssize_t>(count);
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    if (clamp(n, offset) < n) {
      errno = ENOSPC;
      return -1;
    }
    std::memcpy(bytes_ + offset, src, n);
    return static_cast<ssize_t>(n);
  }
  std::uint64_t size() const override { return size_; }
  bool outlives_process() const override { return false; }

 private:
  std::size_t clamp(std::size_t n, std::uint64_t offset) const {
    if (offset >= size_) return 0;
    return static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
  }
  std::uint64_t size_;
  char* bytes_ = nullptr;
};

}  // namespace

std::shared_ptr<Store> make_memory_store(std::uint64_t size) { return std::make_shared<MemoryStore>(size); }

}  // namespace autopager
