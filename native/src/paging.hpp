// What happens to one page: filled from its store, made writable on first write, written back,
// evicted, or poisoned when it cannot be read. Each operation holds the page's stripe lock, so two
// faults on one page cause one read. The states and the rules on errors: docs/DESIGN.md, "Pager:
// errors and page states".
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "autopager/config.hpp"
#include "buffer.hpp"
#include "page_memory.hpp"
#include "region.hpp"
#include "staging.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"
#include "victim_admission.hpp"
#include "victim_buffer.hpp"
#include "write_back_staging.hpp"
#include "zap.hpp"

namespace autopager {

// Who wants a page: a fault (`demand`, by thread `thread`, 0 when the kernel does not say), or
// read-ahead and prefetch, whose failures only leave the page absent for a later fault to retry.
// `for_write`: installed writable and dirty (a write fault: only a page the program writes is dirty).
struct FillRequest {
  static FillRequest fault(bool for_write, pid_t thread) { return FillRequest{for_write, true, thread}; }
  static FillRequest speculative() { return FillRequest{false, false, 0}; }

  bool for_write = false;
  bool demand = true;
  pid_t thread = 0;
};

class Paging {
 public:
  // `memory`: how the buffer is counted (units of its smallest page), as `buffer` counts it.
  Paging(const Config& config, Userfaultfd& uffd, Buffer& buffer, StatsCounters& stats, const PageMemory& memory)
      : config_(config),
        uffd_(uffd),
        buffer_(buffer),
        stats_(stats),
        staging_(uffd, config.page_size),
        write_staging_(memory.write_staging_slots, memory.write_staging_bytes),
        victims_(uffd, config, memory, buffer.policy().victim_units()),
        victim_admission_(buffer.policy().victim_units()) {}

  // Takes the units of the buffer a page of `region` takes for a demand fill, waiting (Paging::reserve_slot,
  // or a filler's own wait that completes its reads meanwhile); false when none can be had, or once the
  // region is closing (its release waits for the claim that waits here).
  using Reserve = std::function<bool(const Region& region)>;

  // Brings the page in, if it is absent, through `io_buffer` (page_size bytes, page-aligned); a demand
  // fill waits for its units through `reserve` (as claim's), a speculative one (read-ahead, prefetch)
  // gives up when they are not free. Returns true when this call installed the page.
  bool fill(const RegionPtr& region, std::uint64_t page, const FillRequest& request, char* io_buffer,
            const Reserve& reserve);

  // A fill in two steps, for reads that complete later. claim() takes the page's units of the buffer (through
  // `reserve`, or only free ones when speculative) and marks the absent page kFilling. kNoRoom: a
  // demand fill found no slot because the buffer is full of pages that cannot be written back; the
  // fault has been failed (fail_fault). finish() installs the `got` bytes read (-1: the read failed,
  // with errno) and returns true when the page is now resident.
  enum class Claim { kClaimed, kNotNeeded, kNoRoom };
  bool try_reserve_slot(std::uint64_t units) { return buffer_.try_reserve(units); }
  // Waits for a page's units of `region`; false after a bounded wait while write-backs fail and nothing can be
  // evicted, or when the region is closing.
  bool reserve_slot(const Region& region);
  // Whether the whole region fits in the buffer and `pages` more of it can be read in now without evicting
  // anything (Buffer::has_room).
  bool has_room(const Region& region, std::uint64_t pages) const {
    return buffer_.has_room(region.total_units(), pages * region.units);
  }
  Claim claim(Region& region, std::uint64_t page, const FillRequest& request, const Reserve& reserve);
  // For the fillers' read slots: Buffer::slots_transient, Buffer::claim_slot_flush, and the evictors' write-back slots'
  // part of the flush.
  bool slots_transient() const { return buffer_.slots_transient(); }
  bool claim_slot_flush() { return buffer_.claim_slot_flush(); }
  void give_back_idle_staging() { write_staging_.give_back_idle(); }
  bool finish(const RegionPtr& region, std::uint64_t page, const FillRequest& request, char* io_buffer, ssize_t got);
  // The same for a run of speculative pages read with one request. claim_run() claims up to `most` absent
  // pages from `lead` in `direction`: the first it can, and those after it up to one it cannot (resident,
  // in transit, or no free units in the buffer). Returns how many, and in `first` the lowest of them.
  std::uint64_t claim_run(Region& region, std::uint64_t lead, int direction, std::uint64_t most, std::uint64_t& first);
  // Installs the pages the `got` bytes read cover with one copy, clean; the others (a read that failed or
  // ended early, a copy that failed) are left absent for a fault to read again.
  void finish_run(const RegionPtr& region, std::uint64_t first, std::uint64_t count, char* io_buffer, ssize_t got);
  // Reads `n` bytes of the store at `offset`, trying `attempts` times while it fails.
  static ssize_t read_store(Store& store, char* dst, std::size_t n, std::uint64_t offset, int attempts);
  // Wakes the threads faulting on a page that needs no fill from them, unless it is filling: that fill's copy
  // wakes them, and waking them before it would only make them fault again.
  void wake_unless_filling(Region& region, std::uint64_t page);
  // The first write to a clean, write-protected page: mark it dirty and let the writer through. Only that
  // page: a neighbour let through unwritten would be written back over what others wrote to the file.
  void resolve_write(Region& region, std::uint64_t page);
  // The most bytes one write-back carries: a larger run holds its pages' stripes longer for little gain.
  static constexpr std::size_t kMostRunBytes = std::size_t{8} << 20;
  // Writes back the dirty pages among `count` from `first` (at most kMostRunBytes), each run of them with one
  // write; they stay resident, write-protected again. Returns 0, or the errno of the first write that failed:
  // the pages that could not be written stay dirty, and `unwritten` (when given) counts them.
  int write_back(Region& region, std::uint64_t first, std::uint64_t count, std::uint64_t* unwritten = nullptr);
  // Evicts victims of the policy until `most` units are freed, dropping their memory together, or keeping it in
  // the victim buffer (which then drops its oldest victims to make room); when the policy has too few, drops
  // victims of the buffer instead. Returns how many units it freed (victims kept still hold theirs).
  std::uint64_t evict(std::uint64_t most);
  // Frees room for a page: a victim of the buffer goes first, which costs no write-back and no wait.
  bool evict_one() { return drop_victims(1) > 0 || evict(1) > 0; }
  // What release_region does with a dirty page: writes it back, or drops it with the rest (a store whose
  // contents die with the region: a heap mapping's).
  enum class DirtyPages { kWriteBack, kDiscard };
  // Releases every page of a closing region, writing dirty ones back (or dropping them), once no claim of its
  // pages is under way (Region::claims) and no page is in transit: on return none of its pages holds units of
  // the buffer or counts as dirty, and none is written afterwards. Returns 0, or the errno of a write-back that
  // failed: then the pages that could not be written stay resident and dirty, every other page is released,
  // and the region may be opened again (reopen_region) and retried.
  int release_region(Region& region, DirtyPages dirty_pages = DirtyPages::kWriteBack);
  // Opens a region whose release failed: clears closing and queues its resident pages for eviction again
  // (evictors drop the entries of a closing region's pages they come upon).
  void reopen_region(Region& region);
  // Whether the latest write-back failed (no write-back succeeded since).
  bool write_backs_failing() const { return write_backs_failing_.load(std::memory_order_relaxed); }

 private:
  // Whether a page written back stays resident (write-protected again, clean) or is about to go.
  enum class KeepResident { kNo, kYes };
  // Whether a failed fault's page holds a buffer slot to give back.
  enum class HoldsSlot { kNo, kYes };

  // Writes back a dirty page (nothing when it is not dirty), under its stripe lock.
  int write_back_locked(Region& region, std::uint64_t page, KeepResident keep_resident);
  // Writes back `count` consecutive dirty pages from `first` with one write (they lie next to each
  // other in memory and in the store), under their stripe locks. Returns 0, or the errno of the write:
  // then every page of the run stays dirty.
  int write_back_run_locked(Region& region, std::uint64_t first, std::uint64_t count, KeepResident keep_resident);
  // Whether writing back a run of dirty pages goes on past a run that could not be written.
  enum class AfterFailure { kStop, kGoOn };
  // Under the stripes of pages [first, last): writes back each run of dirty pages among them with one write, and
  // page by page where that write fails, so that one page that cannot be written (a bad block) keeps no
  // neighbour dirty; `unwritten` (when given) counts the pages left dirty by a failure. Stops once the region is
  // closing (its release writes them). Returns 0 or the first errno.
  int write_back_dirty_runs_locked(Region& region, std::uint64_t first, std::uint64_t last, AfterFailure after,
                                   std::uint64_t* unwritten);
  // Writes `bytes` of a region's memory at `address` to its store at `offset`, through a write-back slot where
  // that makes fewer, larger disk requests (write_back_staging.hpp). As Store::write.
  ssize_t write_to_store(Region& region, const char* address, std::size_t bytes, std::uint64_t offset);
  // Writes back the dirty victims of an eviction batch, each run of consecutive pages with one write,
  // so that the disk sees large requests where the pages are small; they stay resident, clean. Returns
  // 0, or the errno of the first run that could not be written: its victims, and those not yet
  // written, leave `victims` and are queued for eviction again.
  int write_back_victims(std::vector<PageRef>& victims);
  // For a region without write tracking: moves the page out of the region, writes it, drops it; a
  // write racing with it faults and waits. nullopt when the page could not be moved (the caller
  // writes it in place); else 0, or the errno of a failed write, the page then back in place.
  std::optional<int> write_back_moved_out(Region& region, std::uint64_t page);
  // A fault on this page cannot be served (`why`, errno `err`): the faulting thread gets SIGBUS.
  // Under the page's stripe lock.
  // Gives up a claimed page that was not installed: absent again, its slot back, its waiters woken.
  void abandon_fill_locked(Region& region, std::uint64_t page);
  // The same for a page whose copy failed with `err`, said on stderr unless the range is going away.
  void abandon_install_locked(Region& region, std::uint64_t page, int err);
  void fail_fault_locked(Region& region, std::uint64_t page, const FillRequest& request, int err, const char* why,
                         HoldsSlot holds_slot);
  // The victim buffer's arena a page evicted from this region can wait in: one of a page size it keeps (its
  // kind's: writable or read-only) whose writes the pager sees (or that takes none), so that a victim is clean and
  // a fault installs it write-protected as a fill does.
  std::optional<unsigned> victim_arena(const Region& region) const {
    if (!victims_.enabled() || (region.writable && !region.track_writes)) return std::nullopt;
    return victims_.arena_for(region);
  }
  // Slots of the victim buffer for the last pages of an eviction's batch (the policy's latest victims) it may
  // keep, as many as the buffer holds, dropping its oldest victims for room (no stripe held): `slots[i]` is
  // batch[i]'s; none while victims are not hit but in one batch of VictimAdmission::kSampleEvery. Returns the
  // units the victims dropped gave back.
  std::uint64_t take_victim_slots(const std::vector<PageRef>& batch, std::vector<std::optional<VictimSlot>>& slots);
  // A fault (or read-ahead) on a page in the victim buffer: installs it from there, as `request` asks; false
  // when it is no longer a victim (dropped meanwhile: the caller fills it as an absent page).
  bool install_victim(const RegionPtr& region, std::uint64_t page, const FillRequest& request);
  // Drops the oldest victims until `most` units are given back; returns how many were.
  std::uint64_t drop_victims(std::uint64_t most);
  // Under the page's stripe, a kVictim page: drops it (absent, its slot back) unless a dropper has taken it.
  bool drop_victim_locked(Region& region, std::uint64_t page);
  void note_write_back(int err);
  void report_eviction_failure(int err);

  const Config& config_;
  Userfaultfd& uffd_;
  Buffer& buffer_;
  StatsCounters& stats_;
  Zapper zapper_;
  StagingArea staging_;
  WriteBackStaging write_staging_;
  VictimBuffer victims_;
  VictimAdmission victim_admission_;
  std::atomic<bool> write_backs_failing_{false};
  std::atomic<bool> reported_eviction_failure_{false};
};

}  // namespace autopager
