#include "victim_buffer.hpp"

#include <sys/mman.h>

#include <cerrno>

#include <system_error>

namespace autopager {

VictimBuffer::VictimBuffer(Userfaultfd& uffd, std::size_t page_size, std::uint64_t pages)
    : uffd_(uffd), page_size_(page_size), pages_(pages), queue_(pages) {
  if (pages == 0) return;
  void* area = mmap(nullptr, pages * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
  if (area == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the victim buffer");
  // Never inherited: a child's pager (if any) is its own.
  madvise(area, pages * page_size, MADV_DONTFORK);
  try {
    uffd_.register_range(area, pages * page_size, WriteProtect::kNo);
  } catch (...) {
    munmap(area, pages * page_size);
    throw;
  }
  arena_ = static_cast<char*>(area);
}

VictimBuffer::~VictimBuffer() {
  if (arena_ != nullptr) munmap(arena_, pages_ * page_size_);
}

std::vector<std::uint64_t> VictimBuffer::take_slots(std::uint64_t most) {
  std::vector<std::uint64_t> slots;
  std::lock_guard<std::mutex> lock(mutex_);
  while (slots.size() < most) {
    std::optional<std::uint64_t> slot = queue_.take_slot();
    if (!slot) break;
    slots.push_back(*slot);
  }
  return slots;
}

void VictimBuffer::give_back_slots(const std::vector<std::uint64_t>& slots) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::uint64_t slot : slots) queue_.give_back_slot(slot);
}

std::optional<bool> VictimBuffer::keep(const Region& region, std::uint64_t page, std::uint64_t slot) {
  char* address = region.page_address(page);
  char* kept = slot_address(slot);
  // A move works on anonymous memory only (not a kept region's memfd) and is refused up front (EINVAL) where
  // the region's protection differs from the arena's; then a copy, which takes any page that is mapped. Any
  // other failure may have moved part of the page: the copy would read the hole, and fault on it, so the page
  // is not kept (it is clean: dropped, it reads again).
  int err = EINVAL;
  if (uffd_.has_move() && !region.kept) err = uffd_.move(kept, address, page_size_);
  if (err == 0) return true;
  if (err == EINVAL && page_size_ <= kMostCopiedAtOnce && uffd_.copy(kept, address, page_size_, WriteProtect::kNo) == 0)
    return false;
  drop(slot);
  return std::nullopt;
}

void VictimBuffer::park(PageRef page, std::uint64_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.park(std::move(page), slot);
}

std::optional<std::uint64_t> VictimBuffer::take(const Region& region, std::uint64_t page) {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.take(key_of(region, page));
}

std::optional<Victim> VictimBuffer::pop_oldest() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.pop_oldest();
}

int VictimBuffer::install(const Region& region, std::uint64_t page, std::uint64_t slot, WriteProtect protect) {
  return uffd_.copy(region.page_address(page), slot_address(slot), page_size_, protect);
}

void VictimBuffer::drop(std::uint64_t slot) {
  madvise(slot_address(slot), page_size_, MADV_DONTNEED);
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.give_back_slot(slot);
}

}  // namespace autopager
