#include "victim_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include <system_error>

namespace autopager {
namespace {

// The page sizes of the arenas: writable regions' pages, then read-only regions' where they differ; only those
// of which a slot fits in the capacity.
std::vector<std::size_t> arena_page_sizes(const Config& config, const PageMemory& memory, std::uint64_t capacity) {
  std::vector<std::size_t> sizes;
  for (std::size_t size : {config.page_size_for(true), config.page_size_for(false)})
    if (capacity >= memory.units_of(size) && (sizes.empty() || sizes.front() != size)) sizes.push_back(size);
  return sizes;
}

std::vector<std::uint64_t> units_of(const std::vector<std::size_t>& sizes, const PageMemory& memory) {
  std::vector<std::uint64_t> units;
  for (std::size_t size : sizes) units.push_back(memory.units_of(size));
  return units;
}

}  // namespace

VictimBuffer::VictimBuffer(Userfaultfd& uffd, const Config& config, const PageMemory& memory, std::uint64_t capacity)
    : uffd_(uffd), queue_(units_of(arena_page_sizes(config, memory, capacity), memory), capacity) {
  const std::vector<std::size_t> sizes = arena_page_sizes(config, memory, capacity);
  try {
    for (unsigned arena = 0; arena < sizes.size(); ++arena) {
      const std::uint64_t slots = queue_.slots_of(arena);
      const std::size_t bytes = slots * sizes[arena];
      void* area = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (area == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the victim buffer");
      arenas_.push_back(Arena{sizes[arena], static_cast<char*>(area), slots});
      // Never inherited: a child's pager (if any) is its own.
      madvise(area, bytes, MADV_DONTFORK);
      uffd_.register_range(area, bytes, WriteProtect::kNo);
    }
  } catch (...) {
    for (const Arena& arena : arenas_) munmap(arena.base, arena.slots * arena.page_size);
    throw;
  }
}

VictimBuffer::~VictimBuffer() {
  for (const Arena& arena : arenas_) munmap(arena.base, arena.slots * arena.page_size);
}

std::optional<unsigned> VictimBuffer::arena_for(const Region& region) const {
  for (unsigned arena = 0; arena < arenas_.size(); ++arena)
    if (arenas_[arena].page_size == region.page_size) return arena;
  return std::nullopt;
}

std::optional<VictimSlot> VictimBuffer::take_slot(unsigned arena) {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.take_slot(arena);
}

void VictimBuffer::give_back_slot(VictimSlot slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.give_back_slot(slot);
}

std::optional<bool> VictimBuffer::keep(const Region& region, std::uint64_t page, VictimSlot slot) {
  char* address = region.page_address(page);
  char* kept = slot_address(slot);
  const std::size_t page_size = arenas_[slot.arena].page_size;
  // A move works on anonymous memory only (not a kept region's memfd) and is refused up front (EINVAL) where
  // the region's protection differs from the arena's; then a copy, which takes any page that is mapped. Any
  // other failure may have moved part of the page: the copy would read the hole, and fault on it, so the page
  // is not kept (it is clean: dropped, it reads again).
  int err = EINVAL;
  if (uffd_.has_move() && !region.kept) err = uffd_.move(kept, address, page_size);
  if (err == 0) return true;
  if (err == EINVAL && page_size <= kMostCopiedAtOnce && uffd_.copy(kept, address, page_size, WriteProtect::kNo) == 0)
    return false;
  drop(slot);
  return std::nullopt;
}

void VictimBuffer::park(PageRef page, VictimSlot slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.park(std::move(page), slot);
}

std::optional<VictimSlot> VictimBuffer::take(const Region& region, std::uint64_t page) {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.take(key_of(region, page));
}

std::optional<Victim> VictimBuffer::pop_oldest() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.pop_oldest();
}

int VictimBuffer::install(const Region& region, std::uint64_t page, VictimSlot slot, WriteProtect protect) {
  return uffd_.copy(region.page_address(page), slot_address(slot), arenas_[slot.arena].page_size, protect);
}

std::uint64_t VictimBuffer::free_units() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.capacity() - queue_.held_units();
}

void VictimBuffer::drop(VictimSlot* slots, std::size_t count) {
  std::sort(slots, slots + count, [](const VictimSlot& a, const VictimSlot& b) {
    return a.arena != b.arena ? a.arena < b.arena : a.index < b.index;
  });
  for (std::size_t first = 0, end = 0; first < count; first = end) {
    for (end = first + 1;
         end < count && slots[end].arena == slots[first].arena && slots[end].index == slots[end - 1].index + 1;)
      ++end;
    madvise(slot_address(slots[first]), (end - first) * arenas_[slots[first].arena].page_size, MADV_DONTNEED);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < count; ++i) queue_.give_back_slot(slots[i]);
}

}  // namespace autopager
