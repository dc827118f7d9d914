// The fault reader and the fillers. The reader reads up to max_fault_events events per call from the
// userfaultfd and queues them; `fillers` threads take them, read the pages from their stores and
// install them, then queue the read-ahead pages for any idle filler.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "autopager/config.hpp"
#include "paging.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"
#include "work_queue.hpp"

namespace autopager {

class FillerPool {
 public:
  FillerPool(const Config& config, Userfaultfd& uffd, Paging& paging, const RegionTable& regions,
             StatsCounters& stats);
  ~FillerPool();
  FillerPool(const FillerPool&) = delete;
  FillerPool& operator=(const FillerPool&) = delete;

  void prefetch(PageRef page) { queue_.push_speculative(std::move(page)); }

 private:
  void read_faults();
  void serve();
  void serve_fault(const FaultWork& fault, char* io_buffer);

  const Config& config_;
  Userfaultfd& uffd_;
  Paging& paging_;
  const RegionTable& regions_;
  StatsCounters& stats_;
  WorkQueue queue_;
  int stop_event_ = -1;
  std::thread reader_;
  std::vector<std::thread> fillers_;
};

}  // namespace autopager
