// The fault reader and the fillers. The reader role rotates among the fillers (leader/followers):
// one filler waits on the userfaultfd and reads up to max_fault_events events. Each filler has its
// own ring of asynchronous reads (read_queue.hpp): the reader queues the reads of every fault it
// reads, and of their read-ahead, in its ring and keeps the role while the ring has room, so a burst
// of faults costs one submission and the reader sleeps once for all of them. Faults whose store must
// be read in place (a memory store, a store without a file behind it) go as before: the reader keeps
// a lone one when fills are faster than waking another thread, and otherwise hands the role to an
// idle filler and the rest of the burst to the others, so a hot region gets more fillers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "autopager/config.hpp"
#include "paging.hpp"
#include "read_queue.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {

class FillerPool {
 public:
  // Starts the fillers once each has its buffers and ring; throws std::system_error (ENOMEM, EAGAIN)
  // when a thread or a buffer cannot be had, with no thread left running.
  FillerPool(const Config& config, Userfaultfd& uffd, Paging& paging, const RegionTable& regions,
             StatsCounters& stats);
  ~FillerPool();
  FillerPool(const FillerPool&) = delete;
  FillerPool& operator=(const FillerPool&) = delete;

  void prefetch(PageRef page);

 private:
  struct Fault {
    std::uintptr_t address;
    std::uint64_t flags;  // UFFD_PAGEFAULT_FLAG_*
    pid_t thread;         // the faulting thread, 0 when the kernel does not say
    std::chrono::steady_clock::time_point read_at;
  };

  // A read in flight in a filler's ring, by slot.
  struct PendingRead {
    RegionPtr region;
    std::uint64_t page = 0;
    FillRequest request;
    std::chrono::steady_clock::time_point read_at;
    std::size_t requested = 0;
  };
  struct Filler;
  enum class ReadResult { kFaults, kNothing, kStopped };
  enum class Start { kQueued, kNotNeeded, kInPlace };

  void serve();
  void stop();
  // A filler's setup (its buffers and ring) ended: `error` is null when it succeeded.
  void report_setup(std::exception_ptr error);
  // Runs as the fault reader until the role must go to another filler; false, or true at shutdown.
  bool lead(Filler& self, std::unique_lock<std::mutex>& lock, std::vector<uffd_msg>& messages,
            std::vector<Fault>& batch);
  // Reads fault events as the reader; waits for them (serving completed reads meanwhile) when `wait`.
  ReadResult read_faults(Filler& self, std::vector<uffd_msg>& messages, std::vector<Fault>& faults, bool wait);
  // Serves a fault, or queues its read. False, with nothing done, when it needs a read in place and
  // `may_block` is false.
  bool start_fault(Filler& self, const Fault& fault, bool may_block);
  bool start_speculative(Filler& self, const PageRef& page, bool may_block);
  Start queue_fill(Filler& self, const RegionPtr& region, std::uint64_t page, const FillRequest& request,
                   std::chrono::steady_clock::time_point read_at);
  void fill_in_place(Filler& self, const RegionPtr& region, std::uint64_t page, const FillRequest& request);
  // A demand fill's buffer slot; never sleeps for one while this filler's own reads are in flight.
  // False when none can be had (Paging::reserve_slot).
  bool reserve_slot(Filler& self);
  // Serves the filler's completed reads; waits for an event when `wait`. True at shutdown.
  bool collect(Filler& self, bool wait, bool watch_faults);
  void finish_read(Filler& self, const ReadQueue::Completion& completion);
  void wake_unless_filling(const Region& region, std::uint64_t page);
  void record_service(std::chrono::steady_clock::time_point read_at);
  void queue_read_ahead(const RegionPtr& region, std::uint64_t page);
  // A read-ahead read completed: the next read of its stream, if it goes on (read_ahead.hpp).
  void continue_read_ahead(const RegionPtr& region, std::uint64_t page);
  bool fills_are_fast() const;

  const Config& config_;
  Userfaultfd& uffd_;
  Paging& paging_;
  const RegionTable& regions_;
  StatsCounters& stats_;
  int stop_event_ = -1;
  std::atomic<std::uint64_t> fill_ns_average_{0};  // moving average of one demand fill

  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Fault> faults_;
  std::deque<PageRef> speculative_;
  bool reader_active_ = false;
  unsigned idle_fillers_ = 0;
  bool stopped_ = false;
  std::condition_variable set_up_;
  unsigned set_up_count_ = 0;       // fillers whose setup ended
  std::exception_ptr setup_error_;  // the first setup that failed
  std::vector<std::thread> fillers_;
};

}  // namespace autopager
