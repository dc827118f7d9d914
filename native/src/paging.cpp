#include "paging.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tsan_annotations.hpp"

namespace autopager {
namespace {

// How long a fault waits for a buffer slot while write-backs fail and no page can be evicted, before
// it fails with SIGBUS: a buffer full of pages that cannot be written never drains by itself.
constexpr auto kMostWaitForRoom = std::chrono::seconds(1);
// Reads of a page before its fault fails: the first and one retry (a transient error).
constexpr int kReadAttempts = 2;

// Pages whose memory is to be dropped, so that their next access faults: anonymous memory is zapped, a kept
// region's shared memory punched out (kept_memory.hpp). A poisoned page has no memory, only its marker, which
// a zap clears and a punch keeps. Pages next to each other make one range.
class Dropped {
 public:
  void add(const Region& region, std::uint64_t page) { add(region.kept ? shared_ : anonymous_, region, page); }
  void add_poisoned(const Region& region, std::uint64_t page) { add(anonymous_, region, page); }
  void drop(Zapper& zapper) const {
    if (!anonymous_.empty()) zapper.zap(anonymous_);
    KeptMemory::drop(shared_);
  }

 private:
  static void add(std::vector<iovec>& ranges, const Region& region, std::uint64_t page) {
    char* address = region.page_address(page);
    if (!ranges.empty() && static_cast<char*>(ranges.back().iov_base) + ranges.back().iov_len == address)
      ranges.back().iov_len += region.page_size;
    else
      ranges.push_back({address, region.page_size});
  }

  std::vector<iovec> anonymous_;
  std::vector<iovec> shared_;
};

// Counts a claim of a region's pages for as long as it lives (Region::claims).
class ClaimUnderWay {
 public:
  explicit ClaimUnderWay(Region& region) : region_(region) { region_.claims.under_way.fetch_add(1); }
  ~ClaimUnderWay() { region_.claims.under_way.fetch_sub(1); }
  ClaimUnderWay(const ClaimUnderWay&) = delete;
  ClaimUnderWay& operator=(const ClaimUnderWay&) = delete;

 private:
  Region& region_;
};

}  // namespace

void Region::wait_while_in_transit(std::uint64_t page) const {
  for (;;) {
    PageState s = state(page);
    if (s != PageState::kFilling && s != PageState::kEvicting) return;
    std::this_thread::yield();
  }
}

void Region::wait_for_claims() const {
  while (claims.under_way.load() != 0) std::this_thread::yield();
}

ssize_t Paging::read_store(Store& store, char* dst, std::size_t n, std::uint64_t offset, int attempts) {
  ssize_t got = -1;
  for (int attempt = 0; attempt < attempts && got < 0; ++attempt) got = store.read(dst, n, offset);
  return got;
}

bool Paging::fill(const RegionPtr& region, std::uint64_t page, const FillRequest& request, char* io_buffer,
                  const Reserve& reserve) {
  if (claim(*region, page, request, reserve) != Claim::kClaimed) return false;
  ssize_t got = read_store(*region->store, io_buffer, region->page_size, region->page_offset(page),
                           request.demand ? kReadAttempts : 1);
  return finish(region, page, request, io_buffer, got);
}

bool Paging::reserve_slot(const Region& region) {
  const auto give_up_at = std::chrono::steady_clock::now() + kMostWaitForRoom;
  return buffer_.reserve(region.units, [&] {
    // Its release waits for this claim, and may be what frees the room.
    if (region.closing.load()) return false;
    if (evict_one()) return true;
    return !write_backs_failing() || std::chrono::steady_clock::now() < give_up_at;
  });
}

Paging::Claim Paging::claim(Region& region, std::uint64_t page, const FillRequest& request, const Reserve& reserve) {
  // A fault on a page being evicted (it faulted just as the page went) fills it once it is gone.
  if (request.demand && region.state(page) == PageState::kEvicting) region.wait_while_in_transit(page);
  if (region.state(page) == PageState::kVictim && install_victim(region.shared_from_this(), page, request))
    return Claim::kNotNeeded;
  // Counted before `closing` is looked at: the units taken below are in no page's state until the page is
  // kFilling, and the region's release must not end before they are (or are given back).
  const ClaimUnderWay under_way(region);
  if (region.state(page) != PageState::kAbsent || region.closing.load()) return Claim::kNotNeeded;
  if (!request.demand) {
    if (!buffer_.try_reserve(region.units)) return Claim::kNotNeeded;
  } else if (!reserve(region)) {
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
    if (region.state(page) != PageState::kAbsent || region.closing.load()) return Claim::kNotNeeded;
    fail_fault_locked(region, page, request, ENOMEM,
                      "no room in the buffer: every resident page is dirty and cannot be written back",
                      HoldsSlot::kNo);
    return Claim::kNoRoom;
  }
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.state(page) != PageState::kAbsent || region.closing.load()) {
    buffer_.release(region.units);
    return Claim::kNotNeeded;
  }
  region.set_state(page, PageState::kFilling);
  return Claim::kClaimed;
}

bool Paging::finish(const RegionPtr& region_ptr, std::uint64_t page, const FillRequest& request, char* io_buffer,
                    ssize_t got) {
  Region& region = *region_ptr;
  const std::size_t page_size = region.page_size;
  const int read_error = got < 0 ? (errno != 0 ? errno : EIO) : 0;
  // Nothing of the page in the store (it ends before the page: a file truncated, or mapped past its
  // end) is the kernel's SIGBUS too; a page the store ends within reads as zeros after its end.
  const bool past_end = got == 0 && region.page_bytes(page) > 0;
  if (got > 0 && static_cast<std::size_t>(got) < page_size) std::memset(io_buffer + got, 0, page_size - got);

  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.closing.load()) {  // unmapped while the read was in flight: drop it
    abandon_fill_locked(region, page);
    return false;
  }
  if (read_error != 0 || past_end) {
    if (request.demand) {
      fail_fault_locked(region, page, request, read_error != 0 ? read_error : ENXIO,
                        read_error != 0 ? "its store could not be read" : "it lies past the end of its store",
                        HoldsSlot::kYes);
    } else {  // read-ahead: leave it to a fault, which reads it again
      abandon_fill_locked(region, page);
    }
    return false;
  }
  // Without write-protect a writable page can change unseen, so it counts as dirty from the start.
  const bool dirty = region.writable && (request.for_write || !region.track_writes);
  const WriteProtect protect = region.track_writes && !request.for_write ? WriteProtect::kYes : WriteProtect::kNo;
  // Publish the page before the copy wakes the faulting thread: whatever that thread does next
  // (write, flush, unmap) must see it resident.
  region.set_state(page, dirty ? PageState::kDirty : PageState::kClean);
  if (dirty) stats_.dirty_pages.fetch_add(1, std::memory_order_relaxed);
  StatsCounters::add(stats_.fills);
  StatsCounters::add(stats_.reads);
  StatsCounters::add(stats_.bytes_read, static_cast<std::uint64_t>(got));
  int err = uffd_.copy(region.page_address(page), io_buffer, page_size, protect);
  // A copy wakes the faulting threads only when it installed something, and a fault that found this
  // page filling waits for this fill's wake: every failed copy wakes them too.
  if (err == EEXIST) uffd_.wake(region.page_address(page), page_size);
  if (err != 0 && err != EEXIST) {
    if (dirty) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
    stats_.fills.fetch_sub(1, std::memory_order_relaxed);
    stats_.reads.fetch_sub(1, std::memory_order_relaxed);
    stats_.bytes_read.fetch_sub(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
    // No memory for the page (a huge-page pool that others emptied): the kernel's hugetlb fault is SIGBUS too,
    // and trying again would only fault again.
    if (err == ENOMEM && request.demand)
      fail_fault_locked(region, page, request, err, "no memory could be had for it", HoldsSlot::kYes);
    else
      abandon_install_locked(region, page, err);
    return false;
  }
  buffer_.policy().on_fill(PageRef{region_ptr, page});
  return true;
}

bool Paging::install_victim(const RegionPtr& region_ptr, std::uint64_t page, const FillRequest& request) {
  Region& region = *region_ptr;
  std::unique_lock<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.state(page) != PageState::kVictim) return false;
  const std::optional<VictimSlot> slot = victims_.take(region, page);
  if (!slot) {  // a dropper has it and waits for this stripe to make it absent
    lock.unlock();
    while (region.state(page) == PageState::kVictim) std::this_thread::yield();
    return false;
  }
  if (region.closing.load()) {  // release_region would not find it in the victim buffer: dropped here
    victims_.drop(*slot);
    buffer_.release(region.units);
    region.set_state(page, PageState::kAbsent);
    return true;
  }
  // As a fill installs a page read (finish): a victim is clean and of a region whose writes the pager sees.
  const bool dirty = region.writable && request.for_write;
  const WriteProtect protect = region.track_writes && !request.for_write ? WriteProtect::kYes : WriteProtect::kNo;
  region.set_state(page, dirty ? PageState::kDirty : PageState::kClean);
  if (dirty) stats_.dirty_pages.fetch_add(1, std::memory_order_relaxed);
  StatsCounters::add(stats_.victim_hits);  // before the copy wakes the faulting thread, as a fill's counts
  victim_admission_.hit(region.units);
  const int err = victims_.install(region, page, *slot, protect);
  victims_.drop(*slot);
  if (err == EEXIST) uffd_.wake(region.page_address(page), region.page_size);
  if (err != 0 && err != EEXIST) {
    if (dirty) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
    stats_.victim_hits.fetch_sub(1, std::memory_order_relaxed);
    abandon_install_locked(region, page, err);
    return true;
  }
  buffer_.policy().on_fill(PageRef{region_ptr, page});
  return true;
}

std::uint64_t Paging::drop_victims(std::uint64_t most) {
  std::vector<Victim> dropping;
  std::uint64_t dropped = 0;
  while (dropped < most && victims_.enabled()) {
    std::optional<Victim> victim = victims_.pop_oldest();
    if (!victim) break;
    dropped += victim->page.region->units;
    dropping.push_back(std::move(*victim));
  }
  // Their memory goes first, together; a fault on one of them meanwhile waits for it to be absent
  // (install_victim). Their units are free once their memory is, all at once, as evict's: before any of
  // them is seen absent.
  std::vector<VictimSlot> slots;
  for (const Victim& victim : dropping) slots.push_back(victim.slot);
  victims_.drop(slots.data(), slots.size());
  buffer_.release(dropped);
  for (const Victim& victim : dropping) {
    Region& region = *victim.page.region;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, victim.page.page));
    region.set_state(victim.page.page, PageState::kAbsent);
  }
  return dropped;
}

bool Paging::drop_victim_locked(Region& region, std::uint64_t page) {
  const std::optional<VictimSlot> slot = victims_.take(region, page);
  if (!slot) return false;
  victims_.drop(*slot);
  buffer_.release(region.units);
  region.set_state(page, PageState::kAbsent);
  return true;
}

std::uint64_t Paging::claim_run(Region& region, std::uint64_t lead, int direction, std::uint64_t most,
                               std::uint64_t& first) {
  const ClaimUnderWay under_way(region);  // as claim's
  std::uint64_t start = lead, count = 0;
  for (std::uint64_t i = 0; i < most && !region.closing.load(); ++i) {
    const std::uint64_t page = direction > 0 ? lead + i : lead - i;
    if (region.state(page) == PageState::kAbsent && buffer_.try_reserve(region.units)) {
      std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
      if (region.state(page) == PageState::kAbsent && !region.closing.load()) {
        region.set_state(page, PageState::kFilling);
        if (count++ == 0) start = page;
        continue;
      }
      buffer_.release(region.units);
    } else if (region.state(page) == PageState::kAbsent) {
      break;  // no free slot: speculative reads never wait for one
    }
    if (count > 0) break;
  }
  first = direction > 0 ? start : start - (count == 0 ? 0 : count - 1);
  return count;
}

void Paging::abandon_fill_locked(Region& region, std::uint64_t page) {
  buffer_.release(region.units);
  region.set_state(page, PageState::kAbsent);
  uffd_.wake(region.page_address(page), region.page_size);
}

void Paging::abandon_install_locked(Region& region, std::uint64_t page, int err) {
  abandon_fill_locked(region, page);
  if (err != ENOENT && err != ESRCH)  // the range is going away (unmap, exit)
    std::fprintf(stderr, "autopager: installing a page failed: %s\n", std::strerror(err));
}

void Paging::finish_run(const RegionPtr& region_ptr, std::uint64_t first, std::uint64_t count, char* io_buffer,
                        ssize_t got) {
  Region& region = *region_ptr;
  const std::size_t page_size = region.page_size;
  const std::uint64_t bytes_got = got > 0 ? static_cast<std::uint64_t>(got) : 0;
  // The pages the read covers; the last may end within the store, the rest of it reading as zeros.
  std::uint64_t covered = std::min<std::uint64_t>(count, (bytes_got + page_size - 1) / page_size);
  if (covered * page_size > bytes_got) std::memset(io_buffer + bytes_got, 0, covered * page_size - bytes_got);
  auto locks = buffer_.lock_run(region, first, count);
  if (region.closing.load()) covered = 0;
  // Without write-protect a writable page can change unseen, so it counts as dirty from the start.
  const bool dirty = region.writable && !region.track_writes;
  const WriteProtect protect = region.track_writes ? WriteProtect::kYes : WriteProtect::kNo;
  for (std::uint64_t page = first; page < first + covered; ++page)
    region.set_state(page, dirty ? PageState::kDirty : PageState::kClean);
  // Counted before the copy wakes the faulting threads, as a page's fill is; taken back for pages not installed.
  const std::uint64_t covered_bytes = std::min<std::uint64_t>(bytes_got, covered * page_size);
  if (dirty) stats_.dirty_pages.fetch_add(covered, std::memory_order_relaxed);
  StatsCounters::add(stats_.fills, covered);
  StatsCounters::add(stats_.bytes_read, covered_bytes);
  std::uint64_t installed = covered;
  if (covered > 0 && uffd_.copy(region.page_address(first), io_buffer, covered * page_size, protect) != 0) {
    // Part of the run may be in: page by page, a page already there (EEXIST) counts as installed.
    installed = 0;
    for (std::uint64_t i = 0; i < covered; ++i) {
      const int err = uffd_.copy(region.page_address(first + i), io_buffer + i * page_size, page_size, protect);
      if (err == EEXIST) uffd_.wake(region.page_address(first + i), page_size);
      if (err == 0 || err == EEXIST) {
        ++installed;
        continue;
      }
      abandon_install_locked(region, first + i, err);
    }
  }
  if (installed < covered) {
    if (dirty) stats_.dirty_pages.fetch_sub(covered - installed, std::memory_order_relaxed);
    stats_.fills.fetch_sub(covered - installed, std::memory_order_relaxed);
    stats_.bytes_read.fetch_sub(std::min<std::uint64_t>(covered_bytes, (covered - installed) * page_size),
                                std::memory_order_relaxed);
  }
  if (installed > 0) StatsCounters::add(stats_.reads);
  for (std::uint64_t page = first + covered; page < first + count; ++page) abandon_fill_locked(region, page);
  for (std::uint64_t page = first; page < first + covered; ++page)
    if (region.resident(page)) buffer_.policy().on_fill(PageRef{region_ptr, page});
}

void Paging::fail_fault_locked(Region& region, std::uint64_t page, const FillRequest& request, int err,
                               const char* why, HoldsSlot holds_slot) {
  StatsCounters::add(stats_.read_errors);
  std::fprintf(stderr, "autopager: page %llu of a region (store offset %llu) cannot be served: %s (%s); the "
                       "faulting thread gets SIGBUS\n",
               static_cast<unsigned long long>(page), static_cast<unsigned long long>(region.page_offset(page)), why,
               std::strerror(err));
  char* address = region.page_address(page);
  if (holds_slot == HoldsSlot::kYes) buffer_.release(region.units);
  // A poison marker raises SIGBUS at the address each thread touches, as the kernel's would, for
  // every thread waiting on the page and every later access, until the page is evicted.
  if (uffd_.has_poison() && uffd_.poison(address, region.page_size) == 0) {
    region.set_state(page, PageState::kPoisoned);
    buffer_.policy().queue_for_eviction(PageRef{region.shared_from_this(), page});
    return;
  }
  // Without it (before Linux 6.6) the page stays absent: the faulting thread gets the signal, and
  // any other waiting thread faults again and is served (or failed) on its own.
  region.set_state(page, PageState::kAbsent);
  if (request.thread != 0) syscall(SYS_tgkill, getpid(), request.thread, SIGBUS);
  else kill(getpid(), SIGBUS);  // the kernel does not say which thread faulted (before Linux 4.14)
  uffd_.wake(address, region.page_size);
}

void Paging::wake_unless_filling(Region& region, std::uint64_t page) {
  // A fill marks its page resident before the copy that maps it, both under the page's stripe: without the
  // stripe, a wake between the two makes the thread fault again at once, and again, for as long as the copy
  // takes, with the filler copying kept off the cores by the thread and the filler serving its faults.
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  if (region.state(page) != PageState::kFilling) uffd_.wake(region.page_address(page), region.page_size);
}

void Paging::resolve_write(Region& region, std::uint64_t page) {
  if (region.state(page) == PageState::kEvicting) region.wait_while_in_transit(page);
  std::lock_guard<std::mutex> lock(buffer_.lock_for(region, page));
  char* address = region.page_address(page);
  if (region.state(page) == PageState::kClean && region.track_writes) {
    region.set_state(page, PageState::kDirty);
    stats_.dirty_pages.fetch_add(1, std::memory_order_relaxed);
    // Clearing wakes the writer.
    if (uffd_.write_protect(address, region.page_size, WriteProtect::kNo) == 0) {
      buffer_.policy().on_write(region, page);
      return;
    }
    // Still protected: clean, so that the writer's next fault tries again (dirty, it would only be woken).
    region.set_state(page, PageState::kClean);
    stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
  }
  // Already dirty (a racing fault), or evicted meanwhile: the writer retries and faults again if needed.
  uffd_.wake(address, region.page_size);
}

void Paging::note_write_back(int err) {
  if (err == 0) {
    write_backs_failing_.store(false, std::memory_order_relaxed);
    return;
  }
  write_backs_failing_.store(true, std::memory_order_relaxed);
  StatsCounters::add(stats_.write_errors);
}

void Paging::report_eviction_failure(int err) {
  // Once a pager: flush, unmap and exit report each failure to their caller.
  if (!reported_eviction_failure_.exchange(true))
    std::fprintf(stderr, "autopager: writing back a dirty page to evict it failed: %s; such pages stay resident "
                         "and dirty, and are tried again (flush, unmap and exit report what could not be written)\n",
                 std::strerror(err));
}

int Paging::write_back_locked(Region& region, std::uint64_t page, KeepResident keep_resident) {
  if (region.state(page) != PageState::kDirty) return 0;
  return write_back_run_locked(region, page, 1, keep_resident);
}

int Paging::write_back_run_locked(Region& region, std::uint64_t first, std::uint64_t count,
                                  KeepResident keep_resident) {
  char* address = region.page_address(first);
  const std::size_t span = count * region.page_size;
  // Write-protect first: a write during the copy-out faults and waits for the locks we hold.
  if (region.track_writes) uffd_.write_protect(address, span, WriteProtect::kYes);
  const std::size_t bytes = (count - 1) * region.page_size + region.page_bytes(first + count - 1);
  AUTOPAGER_WRITE_PROTECTED_READS_BEGIN();
  ssize_t written = write_to_store(region, address, bytes, region.page_offset(first));
  AUTOPAGER_WRITE_PROTECTED_READS_END();
  if (written != static_cast<ssize_t>(bytes)) {
    int err = written < 0 && errno != 0 ? errno : EIO;
    note_write_back(err);
    if (region.track_writes) uffd_.write_protect(address, span, WriteProtect::kNo);
    return err;
  }
  note_write_back(0);
  StatsCounters::add(stats_.write_backs, count);
  StatsCounters::add(stats_.bytes_written, bytes);
  // Without write-protect a page kept resident may be written again unseen: it stays dirty.
  if (keep_resident == KeepResident::kNo || region.track_writes)
    stats_.dirty_pages.fetch_sub(count, std::memory_order_relaxed);
  if (keep_resident == KeepResident::kYes && region.track_writes)
    for (std::uint64_t page = first; page < first + count; ++page) region.set_state(page, PageState::kClean);
  return 0;
}

ssize_t Paging::write_to_store(Region& region, const char* address, std::size_t bytes, std::uint64_t offset) {
  // A megabyte or less of the region's pages is one request anyway.
  constexpr std::size_t kLeastStagedBytes = std::size_t{1} << 20;
  // Not while the pages take the slots' share (Buffer::slots_transient).
  char* slot = bytes > kLeastStagedBytes && region.store->direct_io() && !buffer_.slots_transient()
                   ? write_staging_.take()
                   : nullptr;
  if (slot == nullptr) return region.store->write(address, bytes, offset);
  std::size_t done = 0;
  ssize_t written = 0;
  while (done < bytes) {
    const std::size_t n = std::min(write_staging_.slot_bytes(), bytes - done);
    std::memcpy(slot, address + done, n);
    written = region.store->write(slot, n, offset + done);
    if (written != static_cast<ssize_t>(n)) break;
    done += n;
  }
  const int err = errno;
  // The fillers flush the idle slots, this one included, when the pages start taking the share: only their fills
  // make it start.
  write_staging_.give_back(slot, [this] { return buffer_.slots_transient(); });
  errno = err;
  if (done == bytes) return static_cast<ssize_t>(bytes);
  return written < 0 ? -1 : static_cast<ssize_t>(done) + written;
}

int Paging::write_back_dirty_runs_locked(Region& region, std::uint64_t first, std::uint64_t last, AfterFailure after,
                                         std::uint64_t* unwritten) {
  int first_error = 0;
  // A region that began closing is its release's to write (or to discard, writing nothing).
  for (std::uint64_t page = first; page < last && !region.closing.load();) {
    std::uint64_t stop = page;
    while (stop < last && region.state(stop) == PageState::kDirty) ++stop;
    int failed = stop > page ? write_back_run_locked(region, page, stop - page, KeepResident::kYes) : 0;
    if (failed != 0 && stop - page > 1) {
      failed = 0;
      for (std::uint64_t each = page; each < stop; ++each) {
        const int err = write_back_locked(region, each, KeepResident::kYes);
        if (err != 0 && failed == 0) failed = err;
        if (err != 0 && unwritten != nullptr) ++*unwritten;
      }
    } else if (failed != 0 && unwritten != nullptr) {
      ++*unwritten;
    }
    if (failed != 0 && first_error == 0) first_error = failed;
    if (failed != 0 && after == AfterFailure::kStop) break;
    page = stop == page ? page + 1 : stop;
  }
  return first_error;
}

int Paging::write_back_victims(std::vector<PageRef>& victims) {
  std::vector<std::size_t> dirty;  // indexes into victims, by region and page
  for (std::size_t i = 0; i < victims.size(); ++i)
    if (victims[i].region->track_writes && victims[i].region->state(victims[i].page) == PageState::kDirty)
      dirty.push_back(i);
  std::sort(dirty.begin(), dirty.end(), [&](std::size_t a, std::size_t b) {
    const PageRef& x = victims[a];
    const PageRef& y = victims[b];
    return x.region.get() != y.region.get() ? std::less<const Region*>()(x.region.get(), y.region.get())
                                            : x.page < y.page;
  });
  std::vector<bool> leaves(victims.size(), false);
  int failed = 0;
  for (std::size_t at = 0; at < dirty.size();) {
    Region& region = *victims[dirty[at]].region;
    const std::uint64_t first = victims[dirty[at]].page;
    const std::uint64_t most = std::max<std::uint64_t>(1, kMostRunBytes / region.page_size);
    std::size_t end = at + 1;
    // Only a region's last page may be partial, and it ends a run anyway.
    while (end < dirty.size() && end - at < most && victims[dirty[end]].region.get() == &region &&
           victims[dirty[end]].page == first + (end - at))
      ++end;
    if (failed == 0 && !region.closing.load()) {
      const std::uint64_t last = first + (end - at);
      auto locks = buffer_.lock_run(region, first, last - first);
      // A page written back (a flush) or evicted since splits the run.
      failed = write_back_dirty_runs_locked(region, first, last, AfterFailure::kStop, nullptr);
      if (failed != 0)  // what could not be written leaves the batch
        for (std::size_t k = at; k < end; ++k)
          leaves[dirty[k]] = region.state(victims[dirty[k]].page) == PageState::kDirty;
    } else if (failed != 0) {
      for (std::size_t k = at; k < end; ++k) leaves[dirty[k]] = true;
    }
    at = end;
  }
  if (failed == 0) return 0;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < victims.size(); ++i) {
    if (leaves[i]) buffer_.policy().queue_for_eviction(std::move(victims[i]));
    else victims[kept++] = std::move(victims[i]);
  }
  victims.resize(kept);
  return failed;
}

std::optional<int> Paging::write_back_moved_out(Region& region, std::uint64_t page) {
  if (!uffd_.has_move()) return std::nullopt;
  char* slot = staging_.take();
  if (slot == nullptr) return std::nullopt;
  char* address = region.page_address(page);
  // Fails where the page is shared (after fork), partly absent or a huge page that cannot be split.
  if (uffd_.move(slot, address, region.page_size) != 0) {
    staging_.give_back(slot);
    return std::nullopt;
  }
  const std::size_t bytes = region.page_bytes(page);
  ssize_t written = region.store->write(slot, bytes, region.page_offset(page));
  if (written != static_cast<ssize_t>(bytes)) {
    int err = written < 0 && errno != 0 ? errno : EIO;
    note_write_back(err);
    // Back where it was (nothing can have filled it meanwhile: faults wait while it is in transit).
    if (uffd_.move(address, slot, region.page_size) != 0)
      uffd_.copy(address, slot, region.page_size, WriteProtect::kNo);
    staging_.give_back(slot);
    return err;
  }
  note_write_back(0);
  staging_.give_back(slot);
  StatsCounters::add(stats_.write_backs);
  StatsCounters::add(stats_.bytes_written, bytes);
  stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
  return 0;
}

int Paging::write_back(Region& region, std::uint64_t first, std::uint64_t count, std::uint64_t* unwritten) {
  auto locks = buffer_.lock_run(region, first, count);
  return write_back_dirty_runs_locked(region, first, first + count, AfterFailure::kGoOn, unwritten);
}

std::uint64_t Paging::take_victim_slots(const std::vector<PageRef>& batch,
                                        std::vector<std::optional<VictimSlot>>& slots) {
  // The batch's last pages that fit in the victim buffer, the oldest victims dropped at once to make room.
  std::uint64_t units = 0;
  if (!victim_admission_.admits_batch()) {
    // Victims stay the last pages evicted (not a cache of old ones): as many of the oldest go as the batch evicts.
    for (const PageRef& page : batch) units += page.region->units;
    return drop_victims(units);
  }
  std::size_t first = batch.size();
  for (std::size_t i = batch.size(); i-- > 0;) {
    const Region& region = *batch[i].region;
    if (!victim_arena(region)) continue;
    if (units + region.units > victims_.capacity()) break;
    units += region.units;
    first = i;
  }
  const std::uint64_t free = victims_.free_units();
  const std::uint64_t dropped = units > free ? drop_victims(units - free) : 0;
  for (std::size_t i = first; i < batch.size(); ++i)
    if (const std::optional<unsigned> arena = victim_arena(*batch[i].region)) slots[i] = victims_.take_slot(*arena);
  return dropped;
}

std::uint64_t Paging::evict(std::uint64_t most) {
  // First write the victims back while they stay resident, so that a page is in transit (and a
  // fault on it waits) only while the batch's memory is dropped, not while others are written.
  std::vector<PageRef> victims;
  std::vector<PageRef> poisoned;  // cleared with the batch; they hold no slot
  std::uint64_t chosen = 0;       // the victims' units
  while (chosen < most) {
    std::optional<PageRef> victim = buffer_.policy().next_victim();
    if (!victim) break;
    Region& region = *victim->region;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, victim->page));
    // Stale: evicted (and maybe being filled again) since, or its region is being unmapped (which
    // releases its pages itself). A pinned page leaves the policy for good.
    if (region.closing.load() || region.pinned(victim->page)) continue;
    if (region.state(victim->page) == PageState::kPoisoned) {
      region.set_state(victim->page, PageState::kEvicting);
      poisoned.push_back(std::move(*victim));
      continue;
    }
    if (!region.resident(victim->page)) continue;
    chosen += region.units;
    victims.push_back(std::move(*victim));
  }
  if (int err = write_back_victims(victims); err != 0) report_eviction_failure(err);
  std::vector<std::optional<VictimSlot>> slots(victims.size());  // in the victim buffer, for the batch's last pages
  std::uint64_t victims_dropped = victims_.enabled() ? take_victim_slots(victims, slots) : 0;  // units
  std::vector<std::optional<VictimSlot>> kept_in(victims.size());  // the victim buffer's slot of each kept
  std::size_t copied = 0;  // bytes of pages kept by a copy, not yet dropped from their regions
  Dropped dropped;
  for (const PageRef& p : poisoned) dropped.add_poisoned(*p.region, p.page);
  std::size_t evicting = 0;
  for (std::size_t i = 0; i < victims.size(); ++i) {
    PageRef& victim = victims[i];
    Region& region = *victim.region;
    std::lock_guard<std::mutex> lock(buffer_.lock_for(region, victim.page));
    if (!region.resident(victim.page) || region.closing.load() || region.pinned(victim.page)) continue;
    bool moved_out = false;
    if (!region.track_writes && region.state(victim.page) == PageState::kDirty) {
      // Without write tracking a write can land at any time: take the page out before writing it.
      region.set_state(victim.page, PageState::kEvicting);
      std::optional<int> err = write_back_moved_out(region, victim.page);
      if (!err) region.set_state(victim.page, PageState::kDirty);  // written in place below
      if (err && *err != 0) {
        report_eviction_failure(*err);
        region.set_state(victim.page, PageState::kDirty);
        buffer_.policy().queue_for_eviction(std::move(victim));
        continue;
      }
      moved_out = err.has_value();
    }
    if (!moved_out) {
      // Written since (or never write-protected): write it back now, as it goes.
      if (int err = write_back_locked(region, victim.page, KeepResident::kNo); err != 0) {
        report_eviction_failure(err);
        buffer_.policy().queue_for_eviction(std::move(victim));
        continue;
      }
      region.set_state(victim.page, PageState::kEvicting);
      std::optional<bool> moved;  // kept in the victim buffer: by a move, or by a copy
      if (slots[i]) {
        moved = victims_.keep(region, victim.page, *slots[i]);
        if (moved) kept_in[evicting] = slots[i];
        slots[i].reset();
      }
      // Pages filled together leave together: one range for each run of them.
      if (!moved || !*moved) dropped.add(region, victim.page);
      if (moved && !*moved && (copied += region.page_size) >= VictimBuffer::kMostCopiedAtOnce) {
        dropped.drop(zapper_);
        dropped = Dropped();
        copied = 0;
      }
    }
    if (evicting != i) victims[evicting] = std::move(victim);
    ++evicting;
  }
  victims.resize(evicting);
  for (const std::optional<VictimSlot>& unused : slots)
    if (unused) victims_.give_back_slot(*unused);
  dropped.drop(zapper_);
  // Their memory is gone: the slots go back before any page is seen absent. A victim keeps its slot until
  // it is dropped.
  std::uint64_t released = 0;
  std::uint64_t parked = 0;
  for (std::size_t i = 0; i < victims.size(); ++i) (kept_in[i] ? parked : released) += victims[i].region->units;
  buffer_.release(released);
  if (victims_.enabled()) victim_admission_.evicted(parked + released, parked);
  for (std::size_t i = 0; i < victims.size(); ++i) {
    PageRef& victim = victims[i];
    std::lock_guard<std::mutex> lock(buffer_.lock_for(*victim.region, victim.page));
    victim.region->set_state(victim.page, kept_in[i] ? PageState::kVictim : PageState::kAbsent);
    if (kept_in[i]) victims_.park(victim, *kept_in[i]);
  }
  StatsCounters::add(stats_.evictions, victims.size());
  for (const PageRef& cleared : poisoned) {
    std::lock_guard<std::mutex> lock(buffer_.lock_for(*cleared.region, cleared.page));
    cleared.region->set_state(cleared.page, PageState::kAbsent);
  }
  // The policy had too few pages: the victims' units are what is left to free.
  std::uint64_t evicted = 0;
  for (const PageRef& victim : victims) evicted += victim.region->units;
  if (evicted < most) victims_dropped += drop_victims(most - evicted);
  return evicted + victims_dropped;
}

int Paging::release_region(Region& region, DirtyPages dirty_pages) {
  // A claim that looked at `closing` before it was set may have taken units of the buffer for a page that
  // still reads kAbsent (it marks it kFilling only under the stripe, after taking them): once none is under
  // way, every such page is filling, and the loop below waits for it. No later claim takes anything.
  region.wait_for_claims();
  int first_error = 0;
  Dropped released;  // dropped from memory only if the region stays (munmap does it otherwise)
  for (std::uint64_t page = 0; page < region.page_count; ++page) {
    // A read in flight ends soon (its filler sees the region closing, drops the page and gives its
    // slot back), and so does an eviction; a page in transit is theirs to finish, never this loop's.
    std::unique_lock<std::mutex> lock(buffer_.lock_for(region, page), std::defer_lock);
    PageState state = PageState::kAbsent;
    for (;;) {
      region.wait_while_in_transit(page);
      if (region.state(page) == PageState::kAbsent) break;
      lock.lock();
      state = region.state(page);
      if (state == PageState::kVictim && !drop_victim_locked(region, page)) {
        lock.unlock();  // a dropper has it and waits for this stripe
        std::this_thread::yield();
        continue;
      }
      if (state != PageState::kFilling && state != PageState::kEvicting) break;
      lock.unlock();
    }
    if (!lock.owns_lock() || state == PageState::kAbsent || state == PageState::kVictim) continue;
    if (state != PageState::kPoisoned) {
      if (dirty_pages == DirtyPages::kDiscard) {
        if (state == PageState::kDirty) stats_.dirty_pages.fetch_sub(1, std::memory_order_relaxed);
      } else if (int err = write_back_locked(region, page, KeepResident::kNo); err != 0) {  // it stays, dirty
        if (first_error == 0) first_error = err;
        continue;
      }
      buffer_.release(region.units);
    }
    region.set_state(page, PageState::kAbsent);
    if (state == PageState::kPoisoned) released.add_poisoned(region, page);
    else released.add(region, page);
  }
  if (first_error != 0) {
    released.drop(zapper_);
    return first_error;
  }
  buffer_.policy().forget_region(region);
  return 0;
}

void Paging::reopen_region(Region& region) {
  region.closing.store(false);
  // Pages whose entries are still queued are queued twice: an evictor skips an entry whose page is gone.
  for (std::uint64_t page = 0; page < region.page_count; ++page)
    if (region.resident(page)) buffer_.policy().queue_for_eviction(PageRef{region.shared_from_this(), page});
}

}  // namespace autopager
