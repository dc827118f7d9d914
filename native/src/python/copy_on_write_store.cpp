#include "copy_on_write_store.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <mutex>
#include <utility>

namespace autopager::python {

namespace {

// The scratch file's file system (or the user's quota, or its size limit) has no room for the write.
bool no_room(int error) { return error == ENOSPC || error == EDQUOT || error == EFBIG; }

}  // namespace

CopyOnWriteStore::CopyOnWriteStore(std::shared_ptr<Store> base, const std::string& scratch_directory,
                                   WhenFull when_full)
    : base_(std::move(base)), overlay_(scratch_directory, base_->size()), when_full_(when_full) {}

CopyOnWriteStore::~CopyOnWriteStore() {
  if (char* memory = memory_.load()) munmap(memory, size());
}

ssize_t CopyOnWriteStore::read(void* dst, std::size_t n, std::uint64_t offset) {
  const ssize_t from_base = base_->read(dst, n, offset);
  if (from_base < 0) return -1;
  const std::uint64_t end = offset + n;
  std::shared_lock lock(written_mutex_);
  // Calls copy(part, begin, length) for each part of [offset, end) that `ranges` hold.
  auto each_part = [&](const Ranges& ranges, auto copy) {
    auto range = ranges.upper_bound(offset);
    if (range != ranges.begin() && std::prev(range)->second > offset) --range;
    for (; range != ranges.end() && range->first < end; ++range) {
      const std::uint64_t begin = std::max(range->first, offset);
      const std::uint64_t stop = std::min(range->second, end);
      if (!copy(static_cast<char*>(dst) + (begin - offset), begin, stop - begin)) return false;
    }
    return true;
  };
  if (!each_part(written_, [&](char* part, std::uint64_t at, std::uint64_t length) {
        return overlay_.read(part, length, at) >= 0;
      }))
    return -1;
  each_part(in_memory_, [&](char* part, std::uint64_t at, std::uint64_t length) {
    std::memcpy(part, memory_.load() + at, length);
    return true;
  });
  return from_base;
}

ssize_t CopyOnWriteStore::write(const void* src, std::size_t n, std::uint64_t offset) {
  const std::uint64_t end = std::min<std::uint64_t>(offset + n, size());
  if (end <= offset) return static_cast<ssize_t>(n);  // past the base: bytes no array can see
  if (memory_.load() == nullptr) {
    if (overlay_.write(src, end - offset, offset) >= 0) {
      std::unique_lock lock(written_mutex_);
      remember(written_, offset, end);
      return static_cast<ssize_t>(n);
    }
    if (!no_room(errno) || when_full_.load() == WhenFull::kFail || !overflow_to_memory()) return -1;
  }
  // One writer a page (the pager's page lock); readers of the range wait for `in_memory_`.
  std::memcpy(memory_.load() + offset, src, end - offset);
  std::unique_lock lock(written_mutex_);
  remember(in_memory_, offset, end);
  return static_cast<ssize_t>(n);
}

bool CopyOnWriteStore::overflow_to_memory() {
  std::unique_lock lock(written_mutex_);
  if (memory_.load() != nullptr) return true;
  void* memory = mmap(nullptr, size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return false;
  memory_.store(static_cast<char*>(memory));
  return true;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> CopyOnWriteStore::written_ranges() const {
  std::shared_lock lock(written_mutex_);
  Ranges all = written_;
  for (const auto& [begin, end] : in_memory_) remember(all, begin, end);
  return {all.begin(), all.end()};
}

void CopyOnWriteStore::remember(Ranges& ranges, std::uint64_t begin, std::uint64_t end) {
  auto range = ranges.upper_bound(begin);
  if (range != ranges.begin() && std::prev(range)->second >= begin) {
    --range;
    begin = range->first;
    end = std::max(end, range->second);
    range = ranges.erase(range);
  }
  while (range != ranges.end() && range->first <= end) {
    end = std::max(end, range->second);
    range = ranges.erase(range);
  }
  ranges.emplace(begin, end);
}

}  // namespace autopager::python
