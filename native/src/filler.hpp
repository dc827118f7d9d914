// One filler: a thread's own ring of asynchronous reads (read_queue.hpp), the reads in flight there,
// the slots they and its reads in place land in (read_slots.hpp), and what it does with them: read fault events while it is the
// fault reader, start a fault's or a speculative run's read, complete its reads. What the fillers
// share (the queues, the reader role, the wake-ups) is the pool's (filler_pool.hpp), which runs each
// filler's loop on the filler's thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "autopager/config.hpp"
#include "page_memory.hpp"
#include "paging.hpp"
#include "read_queue.hpp"
#include "read_slots.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {

class FillerPool;

// Whether a fault or a speculative page may be read in place, the filler blocking until it is in.
enum class MayBlock { kNo, kYes };
// Whether a wait for the ring's completions also ends when the userfaultfd has fault events.
enum class WatchFaults { kNo, kYes };

// A fault event read from the userfaultfd.
struct Fault {
  std::uintptr_t address;
  std::uint64_t flags;  // UFFD_PAGEFAULT_FLAG_*
  pid_t thread;         // the faulting thread, 0 when the kernel does not say
  std::chrono::steady_clock::time_point read_at;
};

class Filler {
 public:
  enum class ReadResult { kFaults, kNothing, kStopped };

  // Makes the ring and the slots `memory` gives a filler (one of each kind without a ring: reads in place
  // take one at a time); throws std::bad_alloc when they cannot be had. Call it on the filler's own
  // thread: a ring takes submissions only from the thread that made it.
  Filler(FillerPool& pool, const Config& config, const PageMemory& memory, Userfaultfd& uffd, Paging& paging,
         const RegionTable& regions, StatsCounters& stats, int stop_event);
  ~Filler();
  Filler(const Filler&) = delete;
  Filler& operator=(const Filler&) = delete;

  // Whether a fault or a speculative page can be started now: a slot is free, for the ring or in place.
  bool can_start() const { return slots_.has_free(); }
  bool has_ring() const { return reads_.available(); }
  // Whether the ring has room for another read.
  bool has_free_slot() const { return reads_.available() && slots_.has_free(); }
  bool has_reads_in_flight() const { return reads_.in_flight(); }
  unsigned reads_in_flight() const { return reads_.in_flight_count(); }
  // Hands the reads queued by start_fault and start_speculative to the kernel.
  void submit() { reads_.submit(); }

  // Reads fault events as the reader; with Wait::kYes, waits for them (serving completed reads meanwhile).
  ReadResult read_faults(std::vector<Fault>& faults, Wait wait);
  // Serves a fault, or queues its read. False, with nothing done, when it needs a read in place and
  // `may_block` is MayBlock::kNo.
  bool start_fault(const Fault& fault, MayBlock may_block);
  // Starts the read of a speculative run (a single page, or several through a run slot). False, with
  // nothing done, when that needs a read in place, or a run slot while none is free, and `may_block` is
  // MayBlock::kNo (a run the ring cannot read, found only once its pages are claimed, is read in place).
  bool start_speculative(const PageRun& run, MayBlock may_block);
  // Serves the completed reads; with Wait::kYes, waits for an event first. True at shutdown.
  bool collect(Wait wait, WatchFaults watch_faults);

 private:
  enum class Start { kQueued, kNotNeeded, kInPlace };

  // A read in flight in the ring, by read id (a page slot's index, or a run slot's after them).
  struct PendingRead {
    RegionPtr region;
    std::uint64_t page = 0;   // the first
    std::uint64_t count = 1;  // pages; more than one only through a run slot
    std::uint64_t lead = 0;   // of a speculative read: the page whose stream goes on (PageRun)
    FillRequest request;
    std::chrono::steady_clock::time_point read_at;
    std::size_t requested = 0;
  };

  Start queue_fill(const RegionPtr& region, std::uint64_t page, const FillRequest& request,
                   std::chrono::steady_clock::time_point read_at);
  // Reads the page in place, into a slot (a fault's read counts in the pool's average fill time); true
  // when this call installed it.
  bool fill_in_place(const RegionPtr& region, std::uint64_t page, const FillRequest& request);
  // A free slot, waiting for this filler's reads in flight to free one.
  unsigned take_slot();
  // Frees a slot a read used, giving its memory back while the pages take the slots' share
  // (Buffer::slots_transient); the first to see that start makes every idle slot give its memory back.
  void release_read(ReadSlots& slots, unsigned slot);
  // A demand fill's units of the buffer for a page of `region`; never sleeps for them while this filler's own
  // reads are in flight. False when they cannot be had (Paging::reserve_slot), or once the region is closing.
  bool reserve_slot(const Region& region);
  // Claims a run's pages and reads them into a free run slot: queued in the ring, or in place.
  void start_run(const PageRun& run);
  void finish_read(const ReadQueue::Completion& completion);
  // True once the pool's stop event has fired (its eventfd stays readable).
  bool stop_requested() const;
  void report_read_error(int err);
  void record_service(std::chrono::steady_clock::time_point read_at);

  FillerPool& pool_;
  Userfaultfd& uffd_;
  Paging& paging_;
  const RegionTable& regions_;
  StatsCounters& stats_;
  const int stop_event_;
  ReadQueue reads_;
  ReadSlots slots_;
  std::optional<ReadSlots> run_slots_;  // none where read-ahead reads a page at a time
  const unsigned run_read_base_;        // the read id of run slot 0
  std::vector<PendingRead> pending_;  // by slot
  ReadQueue::Events events_;
  std::vector<uffd_msg> messages_;
  bool reported_read_error_ = false;
};

}  // namespace autopager
