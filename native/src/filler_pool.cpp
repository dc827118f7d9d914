#include "filler_pool.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <new>
#include <string>
#include <system_error>

#include "pager_threads.hpp"

namespace autopager {
namespace {

// Reads in flight at which the reader hands the role to an idle filler (measured with fault_bench: 4
// served random 4 KiB faults from 32 threads about a third faster than one filler keeping them all).
constexpr unsigned kHandOnDepth = 4;

}  // namespace

FillerPool::FillerPool(const Config& config, const PageMemory& memory, Userfaultfd& uffd, Paging& paging,
                       const RegionTable& regions, StatsCounters& stats)
    : config_(config), memory_(memory), uffd_(uffd), paging_(paging), regions_(regions), stats_(stats) {
  stop_event_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_event_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  try {
    for (unsigned i = 0; i < config_.fillers; ++i)
      fillers_.push_back(start_pager_thread("ap-filler", [this] { serve(); }));
    std::unique_lock<std::mutex> lock(mutex_);
    set_up_.wait(lock, [&] { return set_up_count_ == fillers_.size(); });
    if (setup_error_) std::rethrow_exception(setup_error_);
  } catch (...) {
    stop();
    close(stop_event_);
    throw;
  }
}

FillerPool::~FillerPool() {
  stop();
  close(stop_event_);
}

void FillerPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  std::uint64_t one = 1;
  (void)!write(stop_event_, &one, sizeof one);  // wakes the reader, and every filler waiting on its ring
  idle_.notify_all();
  for (auto& t : fillers_) t.join();
  fillers_.clear();
}

void FillerPool::report_setup(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error && !setup_error_) setup_error_ = error;
  ++set_up_count_;
  set_up_.notify_all();
}

void FillerPool::prefetch(PageRef page) {
  std::lock_guard<std::mutex> lock(mutex_);
  speculative_.push_back(PageRun{std::move(page.region), page.page, 1, 1, true});
  if (idle_fillers_ > 0) idle_.notify_one();
}

void FillerPool::serve() {
  // Set up here, not by the pool's constructor: a ring takes submissions only from the thread that made it.
  std::unique_ptr<Filler> filler;
  std::vector<Fault> batch;
  try {
    filler = std::make_unique<Filler>(*this, config_, memory_, uffd_, paging_, regions_, stats_, stop_event_);
    batch.reserve(config_.max_fault_events);
  } catch (const std::bad_alloc&) {
    report_setup(std::make_exception_ptr(std::system_error(
        ENOMEM, std::generic_category(),
        "allocating a filler's read slots (pages of " + std::to_string(config_.page_size) + " bytes)")));
    return;
  } catch (...) {
    report_setup(std::current_exception());
    return;
  }
  report_setup(nullptr);
  Filler& self = *filler;

  std::unique_lock<std::mutex> lock(mutex_);
  bool may_lead = true;  // false just after handing the role on: first do what it was handed on for
  while (!stopped_) {
    const bool can_start = self.can_start();
    if (can_start && !faults_.empty()) {
      Fault fault = faults_.front();
      faults_.pop_front();
      lock.unlock();
      self.start_fault(fault, MayBlock::kYes);
      lock.lock();
      may_lead = true;
      continue;
    }
    if (can_start && may_lead && !reader_active_) {
      reader_active_ = true;
      if (lead(self, lock, batch)) break;
      may_lead = false;
      continue;
    }
    may_lead = true;
    PageRun run;
    if (can_start && take_speculative(run)) {
      lock.unlock();
      self.start_speculative(run, MayBlock::kYes);
      run.region.reset();
      lock.lock();
      continue;
    }
    if (self.has_reads_in_flight()) {
      lock.unlock();
      self.collect(Wait::kYes, WatchFaults::kNo);
      lock.lock();
      continue;
    }
    // Never sleep while nobody reads the userfaultfd: take the role, waiting on it this time.
    if (!reader_active_) continue;
    ++idle_fillers_;
    idle_.wait(lock);
    --idle_fillers_;
  }
  // The reader that saw the stop event leaves; wake the others so they see it too.
  stopped_ = true;
  idle_.notify_all();
  lock.unlock();
  while (self.has_reads_in_flight()) self.collect(Wait::kYes, WatchFaults::kNo);
}

bool FillerPool::lead(Filler& self, std::unique_lock<std::mutex>& lock, std::vector<Fault>& batch) {
  enum class Wake { kOneFiller, kEveryFiller };
  auto hand_on = [&](Wake wake) {
    reader_active_ = false;
    if (idle_fillers_ == 0) return;
    if (wake == Wake::kEveryFiller) idle_.notify_all();
    else idle_.notify_one();
  };
  for (;;) {
    // Start queued read-ahead while the ring has room; a page to read in place goes to the followers.
    PageRun run;
    while (self.has_free_slot() && take_speculative(run)) {
      lock.unlock();
      bool started = self.start_speculative(run, MayBlock::kNo);
      lock.lock();
      if (!started) {
        speculative_.push_front(std::move(run));
        break;
      }
    }
    // With a few reads in flight, an idle filler takes the next faults: completing reads (copying
    // and waking the faulting threads) then runs on every core, not in this thread alone.
    const bool busy = self.reads_in_flight() >= kHandOnDepth && idle_fillers_ > 0;
    if (self.has_ring() && (!self.has_free_slot() || busy)) {
      hand_on(Wake::kOneFiller);
      return false;
    }
    // Wait on the userfaultfd only when there is no read-ahead to do meanwhile.
    const Wait wait = speculative_.empty() ? Wait::kYes : Wait::kNo;
    lock.unlock();
    Filler::ReadResult result = self.read_faults(batch, wait);
    lock.lock();
    if (result == Filler::ReadResult::kStopped) {
      reader_active_ = false;
      return true;
    }
    if (result == Filler::ReadResult::kNothing) {
      if (wait == Wait::kYes) continue;  // reads completed; their slots are free again
      hand_on(Wake::kOneFiller);         // read-ahead waits that this ring cannot take: do it as a follower
      return false;
    }
    lock.unlock();
    std::size_t in_place = 0;
    for (const Fault& fault : batch)
      if (!self.start_fault(fault, MayBlock::kNo)) batch[in_place++] = fault;
    batch.resize(in_place);
    self.submit();
    // Keeping the role for one fast read in place costs less than handing it on.
    const bool keep = batch.empty() || (batch.size() == 1 && fills_are_fast());
    if (keep && !batch.empty()) self.start_fault(batch.front(), MayBlock::kYes);
    lock.lock();
    if (keep) continue;
    // Reads in place are slow, or a burst of them: hand the role and the rest of the burst on.
    faults_.insert(faults_.end(), batch.begin() + 1, batch.end());
    hand_on(batch.size() > 1 ? Wake::kEveryFiller : Wake::kOneFiller);
    lock.unlock();
    self.start_fault(batch.front(), MayBlock::kYes);
    lock.lock();
    return false;
  }
}

bool FillerPool::take_speculative(PageRun& run) {
  while (!speculative_.empty()) {
    run = std::move(speculative_.front());
    speculative_.pop_front();
    const std::uint64_t first = run.direction > 0 ? run.lead : run.lead + 1 - run.count;
    if (run.prefetch || !run.region->read_ahead.passed(first, run.count, run.direction)) return true;
  }
  return false;
}

void FillerPool::record_fill_time(std::uint64_t ns) {
  std::uint64_t average = fill_ns_average_.load(std::memory_order_relaxed);
  fill_ns_average_.store(average - average / 8 + ns / 8, std::memory_order_relaxed);
}

bool FillerPool::fills_are_fast() const {
  // About what waking a sleeping thread costs on a virtual machine.
  constexpr std::uint64_t kWakeUpNs = 15000;
  return fill_ns_average_.load(std::memory_order_relaxed) < kWakeUpNs;
}

PageRun FillerPool::read_ahead_run(const RegionPtr& region, std::uint64_t lead, const ReadAheadStreams::Reads& reads) {
  const int direction = static_cast<int>(reads.direction);
  const std::uint64_t to_edge = direction > 0 ? reads.run - lead % reads.run : lead % reads.run + 1;
  const std::uint64_t room = direction > 0 ? region->page_count - lead : lead + 1;
  return PageRun{region, lead, std::min(to_edge, room), direction};
}

void FillerPool::queue_read_ahead(const RegionPtr& region, std::uint64_t page, const FillRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ReadAheadStreams::Reads reads = region->read_ahead.fault(page);
  const std::uint64_t most_converging = std::min(config_.read_around, ConvergingFaults::kMostBlockBytes) / region->page_size;
  const PageBlock converging =
      request.for_write ? PageBlock{page, 1}
                        : converging_.fault(request.thread, region.get(), page, region->page_count, most_converging,
                                            config_.read_ahead + 1);
  const std::uint64_t around = config_.read_around / region->page_size;
  if (reads.starts && around > 1 && paging_.has_room(*region, around)) {
    const PageBlock block = block_around(page, region->page_count, around);
    region->read_ahead.read_around(page, block.first, block.count);
    queue_read_around(region, page, block);
    return;
  }
  if (reads.direction == ReadAheadStreams::Direction::kNone) {
    if (converging.count > 1) queue_read_around(region, page, converging);
    return;
  }
  const int towards = static_cast<int>(reads.direction);
  const std::size_t queued = speculative_.size();
  // Runs to their blocks' edges (read_ahead.hpp), as many as cover the read_ahead runs' pages past the fault.
  const std::uint64_t first = towards > 0 ? page + 1 : page - 1;  // beyond the region at its ends (wraps at page 0)
  for (std::uint64_t covered = 0; covered < region->read_ahead.reads_per_fault() * reads.run;) {
    const std::uint64_t lead = towards > 0 ? first + covered : first - covered;
    if (lead >= region->page_count) break;
    const PageRun next = read_ahead_run(region, lead, reads);
    covered += next.count;
    // A run's pages are looked at when it is read (Paging::claim_run).
    if (next.count == 1 && region->state(lead) != PageState::kAbsent) continue;
    speculative_.push_back(next);
  }
  if (speculative_.size() > queued && idle_fillers_ > 0) idle_.notify_all();
}

void FillerPool::queue_read_around(const RegionPtr& region, std::uint64_t page, const PageBlock& block) {
  const std::uint64_t run = region->read_ahead.run_pages();
  const std::size_t queued = speculative_.size();
  // After the fault first, then before it: a scan that starts here more likely goes on forward.
  for (std::uint64_t lead = page + 1; lead < block.first + block.count; lead += run)
    speculative_.push_back(PageRun{region, lead, std::min(run, block.first + block.count - lead), 1, true});
  for (std::uint64_t end = page; end > block.first;) {  // pages [block.first, end) remain, read downwards
    const std::uint64_t count = std::min(run, end - block.first);
    speculative_.push_back(PageRun{region, end - 1, count, -1, true});
    end -= count;
  }
  StatsCounters::add(stats_.read_around_pages, block.count - 1);
  if (speculative_.size() > queued && idle_fillers_ > 0) idle_.notify_all();
}

bool FillerPool::read_ahead_passed(const PageRun& run, std::uint64_t first, std::uint64_t count) {
  if (run.prefetch) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return run.region->read_ahead.passed(first, count, run.direction);
}

void FillerPool::continue_read_ahead(const RegionPtr& region, std::uint64_t lead) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t next = 0;
  ReadAheadStreams::Reads reads;
  if (!region->read_ahead.next_after(lead, next, reads) || next >= region->page_count) return;
  if (reads.run == 1 && region->state(next) != PageState::kAbsent) return;
  speculative_.push_back(read_ahead_run(region, next, reads));
  if (idle_fillers_ > 0) idle_.notify_one();
}

void FillerPool::add_slots(ReadSlots* slots) {
  std::lock_guard<std::mutex> lock(slot_sets_mutex_);
  slot_sets_.push_back(slots);
}

void FillerPool::remove_slots(ReadSlots* slots) {
  std::lock_guard<std::mutex> lock(slot_sets_mutex_);
  slot_sets_.erase(std::find(slot_sets_.begin(), slot_sets_.end(), slots));
}

void FillerPool::give_back_idle_slots() {
  std::lock_guard<std::mutex> lock(slot_sets_mutex_);
  for (ReadSlots* slots : slot_sets_) slots->give_back_idle();
}

}  // namespace autopager
