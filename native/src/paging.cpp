#include "paging.hpp"


#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tsan_annotations.hpp"

namespace autopager {

void Region::wait_while_in_transit(std::uint64_t page) const {
  for (;;) {
    PageState s = state(page);
    if (s != PageState::kFilling && s != PageState::kEvicting) return;
    std::this_thread::yield();
  }
}

bool Paging::fill(const RegionPtr& region, std::uint64_t page, bool for_write, bool speculative,
                  char* io_buffer) {
  if (!claim(*region, page, speculative, [this] { reserve_slot(); }))
    return false;
  ssize_t got = region->store->read(io_buffer, region->page_size, region->page_offset(page));
  return finish(region, page, for_write, io_buffer, got);
}

bool Paging::claim(Region& region, std::uint64_t page, bool speculative, const std::function<void()>& reserve) {
  // A fault on a page being evicted (it faulted just as the page went) fills it once it is gone.
  if (!speculative && region.state(page) == PageState::kEvicting) region.wait_while_in_transit(page);
  if (region.state(page) != PageState::kAbsent || region.closing.load()) return false;
  if (speculative) {
    if (!buffer_.try_reserve()) return false;
  } else {
    reserve();
  }
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.state(page) != PageState::kAbsent || region.closing.load()) {
    buffer_.release();
    return false;
  }
  region.set_state(page, PageState::kFilling);
  return true;
}

bool Paging::finish(const RegionPtr& region_ptr, std::uint64_t page, bool for_write, char* io_buffer, ssize_t got) {
  Region& region = *region_ptr;
  const std::size_t page_size = region.page_size;
  if (got < 0) {
    std::fprintf(stderr, "autopager: reading page %llu of a region failed: %s; serving zeros\n",
                 static_cast<unsigned long long>(page), std::strerror(errno));
    got = 0;
  }
  if (static_cast<std::size_t>(got) < page_size) std::memset(io_buffer + got, 0, page_size - got);

  std::unique_lock<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.closing.load()) {  // unmapped while the read was in flight: drop it
    region.set_state(page, PageState::kAbsent);
    lock.unlock();
    buffer_.release();
    uffd_.wake(region.page_address(page), page_size);
    return false;
  }
  // Without write-protect a writable page can change unseen, so it counts as dirty from the start.
  const bool dirty = region.writable && (for_write || !region.track_writes);
  const bool protect = region.track_writes && !for_write;
  // Publish the page before the copy wakes the faulting thread: whatever that thread does next
  // (write, flush, unmap) must see it resident.
  region.set_state(page, dirty ? PageState::kDirty : PageState::kClean);
  if (dirty) stats_.dirty_pages.fetch_add(1, std::memory_order_relaxed);
  StatsCounters::add(stats_.fills);
  StatsCounters::add(stats_.bytes_read, static_cast<std::uint64_t>(got));
  int err = uffd_.copy(region.page_address(page), io_buffer, page_size, protect);
  if (err != 0 && err != EEXIST) {
    region.set_state(page, PageState::kAbsent);
    if (dirty) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
    stats_.fills.fetch_sub(1, std::memory_order_relaxed);
    stats_.bytes_read.fetch_sub(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
    lock.unlock();
    buffer_.release();
    if (err != ENOENT && err != ESRCH)  // the range is going away (unmap, exit)
      std::fprintf(stderr, "autopager: installing a page failed: %s\n", std::strerror(err));
    return false;
  }
  buffer_.policy().on_fill(PageRef{region_ptr, page});
  return true;
}

void Paging::resolve_write(Region& region, std::uint64_t page) {
  if (region.state(page) == PageState::kEvicting) region.wait_while_in_transit(page);
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  void* address = region.page_address(page);
  if (region.state(page) == PageState::kClean && region.track_writes) {
    region.set_state(page, PageState::kDirty);
    stats_.dirty_pages.fetch_add(1, std::memory_order_relaxed);
    if (uffd_.write_protect(address, region.page_size, false) == 0) return;  // clearing wakes the writer
  }
  // Already dirty (a racing fault), or evicted meanwhile: the writer retries and faults again if needed.
  uffd_.wake(address, region.page_size);
}

int Paging::write_back_locked(Region& region, std::uint64_t page, bool keep_resident) {
  if (region.state(page) != PageState::kDirty) return 0;
  char* address = region.page_address(page);
  // Write-protect first: a write during the copy-out faults and waits for the lock we hold.
  if (region.track_writes) uffd_.write_protect(address, region.page_size, true);
  std::size_t bytes = region.page_bytes(page);
  AUTOPAGER_WRITE_PROTECTED_READS_BEGIN();
  ssize_t written = region.store->write(address, bytes, region.page_offset(page));
  AUTOPAGER_WRITE_PROTECTED_READS_END();
  if (written != static_cast<ssize_t>(bytes)) {
    int err = errno != 0 ? errno : EIO;
    StatsCounters::add(stats_.write_errors);
    std::fprintf(stderr, "autopager: writing back page %llu failed: %s; the page stays resident\n",
                 static_cast<unsigned long long>(page), std::strerror(err));
    if (region.track_writes) uffd_.write_protect(address, region.page_size, false);
    return err;
  }
  StatsCounters::add(stats_.write_backs);
  StatsCounters::add(stats_.bytes_written, bytes);
  // Without write-protect a page kept resident may be written again unseen: it stays dirty.
  if (!keep_resident || region.track_writes) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
  if (keep_resident && region.track_writes) region.set_state(page, PageState::kClean);
  return 0;
}

int Paging::write_back(Region& region, std::uint64_t page) {
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  return write_back_locked(region, page, true);
}

std::size_t Paging::evict(std::size_t most) {
  // First write the victims back while they stay resident, so that a page is in transit (and a
  // fault on it waits) only while the batch's memory is dropped, not while others are written.
  std::vector<PageRef> victims;
  while (victims.size() < most) {
    std::optional<PageRef> victim = buffer_.policy().next_victim();
    if (!victim) break;
    Region& region = *victim->region;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, victim->page));
    // Stale: evicted (and maybe being filled again) since, or its region is being unmapped (which
    // releases its pages itself). A pinned page leaves the policy for good.
    if (!region.resident(victim->page) || region.closing.load() || region.pinned(victim->page)) continue;
    if (region.track_writes && write_back_locked(region, victim->page, true) != 0) {
      buffer_.policy().on_kept(std::move(*victim));
      break;
    }
    victims.push_back(std::move(*victim));
  }
  std::vector<iovec> ranges;
  std::size_t evicting = 0;
  for (std::size_t i = 0; i < victims.size(); ++i) {
    PageRef& victim = victims[i];
    Region& region = *victim.region;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, victim.page));
    if (!region.resident(victim.page) || region.closing.load()) continue;
    // Written since (or never write-protected): write it back now, as it goes.
    if (write_back_locked(region, victim.page, false) != 0) {
      buffer_.policy().on_kept(std::move(victim));
      continue;
    }
    region.set_state(victim.page, PageState::kEvicting);
    ranges.push_back({region.page_address(victim.page), region.page_size});
    if (evicting != i) victims[evicting] = std::move(victim);
    ++evicting;
  }
  victims.resize(evicting);
  if (victims.empty()) return 0;
  zapper_.zap(ranges);
  for (const PageRef& victim : victims) {
    {
      std::lock_guard<std::mutex> lock(buffer_.lock_for(*victim.region, victim.page));
      victim.region->set_state(victim.page, PageState::kAbsent);
    }
    StatsCounters::add(stats_.evictions);
    buffer_.release();
  }
  return victims.size();
}

int Paging::release_region(Region& region) {
  int first_error = 0;
  for (std::uint64_t page = 0; page < region.page_count; ++page) {
    // A read in flight ends soon (its filler sees the region closing and drops the page), and so
    // does an eviction.
    region.wait_while_in_transit(page);
    if (region.state(page) == PageState::kAbsent) continue;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
    if (region.state(page) == PageState::kAbsent) continue;
    int err = write_back_locked(region, page, false);
    if (err != 0 && first_error == 0) first_error = err;
    if (err != 0) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
    region.set_state(page, PageState::kAbsent);
    buffer_.release();
  }
  buffer_.policy().forget_region(region);
  return first_error;
}

}  // namespace autopager
