// The fault reader and the fillers. The reader role rotates among the fillers (leader/followers):
// one filler waits on the userfaultfd and reads up to max_fault_events events; it hands the role to an
// idle filler, queues all but the first event for any idle filler, and serves the first itself. A lone
// fault thus costs one wake-up, and a burst spreads over every idle filler, so a hot region gets more
// fillers. When fills are faster than waking another thread (a memory store, the page cache), the
// reader keeps the role for a lone fault instead. Read-ahead and prefetch pages are queued behind the
// faults.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "autopager/config.hpp"
#include "paging.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {

class FillerPool {
 public:
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
    std::chrono::steady_clock::time_point read_at;
  };

  enum class ReadResult { kFaults, kNothing, kStopped };

  void serve();
  // Reads fault events as the reader; waits for them only when `wait`.
  ReadResult read_faults(std::vector<uffd_msg>& messages, std::vector<Fault>& faults, bool wait);
  void serve_fault(const Fault& fault, char* io_buffer);
  void queue_read_ahead(const RegionPtr& region, std::uint64_t page);
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
  std::vector<std::thread> fillers_;
};

}  // namespace autopager
