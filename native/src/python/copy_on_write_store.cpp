#include "copy_on_write_store.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <utility>

namespace autopager::python {

CopyOnWriteStore::CopyOnWriteStore(std::shared_ptr<Store> base, const std::string& scratch_directory)
    : base_(std::move(base)), overlay_(scratch_directory, base_->size()) {}

ssize_t CopyOnWriteStore::read(void* dst, std::size_t n, std::uint64_t offset) {
  const ssize_t from_base = base_->read(dst, n, offset);
  if (from_base < 0) return -1;
  const std::uint64_t end = offset + n;
  std::shared_lock lock(written_mutex_);
  auto range = written_.upper_bound(offset);
  if (range != written_.begin() && std::prev(range)->second > offset) --range;
  for (; range != written_.end() && range->first < end; ++range) {
    const std::uint64_t begin = std::max(range->first, offset);
    const std::uint64_t stop = std::min(range->second, end);
    auto* part = static_cast<char*>(dst) + (begin - offset);
    if (overlay_.read(part, stop - begin, begin) < 0) return -1;
  }
  return from_base;
}

ssize_t CopyOnWriteStore::write(const void* src, std::size_t n, std::uint64_t offset) {
  const std::uint64_t end = std::min<std::uint64_t>(offset + n, size());
  if (end <= offset) return static_cast<ssize_t>(n);  // past the base: bytes no array can see
  if (overlay_.write(src, end - offset, offset) < 0) return -1;
  remember_written(offset, end);
  return static_cast<ssize_t>(n);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> CopyOnWriteStore::written_ranges() const {
  std::shared_lock lock(written_mutex_);
  return {written_.begin(), written_.end()};
}

void CopyOnWriteStore::remember_written(std::uint64_t begin, std::uint64_t end) {
  std::unique_lock lock(written_mutex_);
  auto range = written_.upper_bound(begin);
  if (range != written_.begin() && std::prev(range)->second >= begin) {
    --range;
    begin = range->first;
    end = std::max(end, range->second);
    range = written_.erase(range);
  }
  while (range != written_.end() && range->first <= end) {
    end = std::max(end, range->second);
    range = written_.erase(range);
  }
  written_.emplace(begin, end);
}

}  // namespace autopager::python
