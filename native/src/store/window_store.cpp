// A window of another store: `length` bytes from `base`, as a store of its own.
#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "autopager/store.hpp"

namespace autopager {
namespace {

class WindowStore final : public Store {
 public:
  WindowStore(std::shared_ptr<Store> store, std::uint64_t base, std::uint64_t length)
      : store_(std::move(store)), base_(base), length_(length) {
    if (base > store_->size() || length > store_->size() - base) {
      throw std::invalid_argument("a window of " + std::to_string(length) + " bytes at " + std::to_string(base) +
                                  " does not fit in a store of " + std::to_string(store_->size()) + " bytes");
    }
  }
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    if (offset >= length_) return 0;
    return store_->read(dst, static_cast<std::size_t>(std::min<std::uint64_t>(n, length_ - offset)), base_ + offset);
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    if (offset > length_ || n > length_ - offset) {
      errno = ENOSPC;
      return -1;
    }
    return store_->write(src, n, base_ + offset);
  }
  std::uint64_t size() const override { return length_; }
  bool writable() const override { return store_->writable(); }
  int sync() override { return store_->sync(); }
  bool outlives_process() const override { return store_->outlives_process(); }

 private:
  std::shared_ptr<Store> store_;
  std::uint64_t base_;
  std::uint64_t length_;
};

}  // namespace

std::shared_ptr<Store> make_window_store(std::shared_ptr<Store> store, std::uint64_t offset, std::uint64_t length) {
  return std::make_shared<WindowStore>(std::move(store), offset, length);
}

}  // namespace autopager
