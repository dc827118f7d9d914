// The fillers (filler.hpp) and what they share: the fault reader role, the faults handed on, the
// queue of speculative pages (read-ahead, prefetch), the wake-ups. The reader role rotates among the
// fillers (leader/followers): one filler waits on the userfaultfd and reads up to max_fault_events
// events. The reader queues the reads of every fault it reads, and of their read-ahead, in its own
// ring and keeps the role while the ring has room, so a burst of faults costs one submission and the
// reader sleeps once for all of them. Faults whose store must be read in place (a memory store, a
// store without a file behind it) go as before: the reader keeps a lone one when fills are faster
// than waking another thread, and otherwise hands the role to an idle filler and the rest of the
// burst to the others, so a hot region gets more fillers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "autopager/config.hpp"
#include "converging_faults.hpp"
#include "filler.hpp"
#include "paging.hpp"
#include "read_around.hpp"
#include "read_slots.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {

class FillerPool {
 public:
  // Starts config.fillers fillers, with the slots `memory` gives each (page_memory.hpp), once each has
  // its slots and ring; throws std::system_error (ENOMEM, EAGAIN) when a thread or a slot cannot be had,
  // with no thread left running.
  FillerPool(const Config& config, const PageMemory& memory, Userfaultfd& uffd, Paging& paging,
             const RegionTable& regions, StatsCounters& stats);
  ~FillerPool();
  FillerPool(const FillerPool&) = delete;
  FillerPool& operator=(const FillerPool&) = delete;

  void prefetch(PageRef page);

  // For the fillers. What the fault `request` on `page` reads beyond its page, queued as its read starts, so that
  // those pages are read meanwhile: the block around it when it starts a stream in a region that fits in the
  // buffer's room (read_around.hpp), else its stream's read-ahead (read_ahead.hpp), else, for a read fault of a
  // thread closing in on a spot, the block its next probes fall in (converging_faults.hpp).
  void queue_read_ahead(const RegionPtr& region, std::uint64_t page, const FillRequest& request);
  // The read-ahead run from `lead` that `reads` says: to the edge of its block of `reads.run` pages, fewer at the
  // region's end.
  static PageRun read_ahead_run(const RegionPtr& region, std::uint64_t lead, const ReadAheadStreams::Reads& reads);
  // A read-ahead read of the run led by `lead` (PageRun) completed: the next read of its stream, if it goes on
  // (read_ahead.hpp).
  void continue_read_ahead(const RegionPtr& region, std::uint64_t lead);
  // Whether the scan that `run` reads ahead of has gone past its pages [first, first + count) (read_ahead.hpp).
  bool read_ahead_passed(const PageRun& run, std::uint64_t first, std::uint64_t count);
  // How long a demand fill in place took, for the moving average fills_are_fast() reads.
  void record_fill_time(std::uint64_t ns);
  // Each filler's read slots, from its setup to its end, so that any filler can make every idle slot give its
  // memory back (ReadSlots::give_back_idle) when the pages start taking the slots' share.
  void add_slots(ReadSlots* slots);
  void remove_slots(ReadSlots* slots);
  void give_back_idle_slots();

 private:
  // A filler's loop, on its own thread.
  void serve();
  void stop();
  // A filler's setup (its slots and ring) ended: `error` is null when it succeeded.
  void report_setup(std::exception_ptr error);
  // Runs `self` as the fault reader until the role must go to another filler; false, or true at shutdown.
  bool lead(Filler& self, std::unique_lock<std::mutex>& lock, std::vector<Fault>& batch);
  bool fills_are_fast() const;
  // Under the lock: the pages of `block` but `page`, in runs read as prefetch is (never dropped as passed).
  void queue_read_around(const RegionPtr& region, std::uint64_t page, const PageBlock& block);
  // Under the lock: the next queued speculative read worth starting, dropping read-ahead the scan has passed.
  bool take_speculative(PageRun& run);

  const Config& config_;
  const PageMemory memory_;
  Userfaultfd& uffd_;
  Paging& paging_;
  const RegionTable& regions_;
  StatsCounters& stats_;
  int stop_event_ = -1;
  std::atomic<std::uint64_t> fill_ns_average_{0};  // moving average of one demand fill

  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Fault> faults_;
  std::deque<PageRun> speculative_;
  ConvergingFaults converging_;
  bool reader_active_ = false;
  unsigned idle_fillers_ = 0;
  bool stopped_ = false;
  std::condition_variable set_up_;
  unsigned set_up_count_ = 0;       // fillers whose setup ended
  std::exception_ptr setup_error_;  // the first setup that failed
  std::vector<std::thread> fillers_;
  std::mutex slot_sets_mutex_;  // before a ReadSlots' own lock
  std::vector<ReadSlots*> slot_sets_;
};

}  // namespace autopager
