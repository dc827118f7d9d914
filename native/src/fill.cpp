#include "fill.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <system_error>

#include "pager_threads.hpp"

namespace autopager {
namespace {

struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t size) {
    if (posix_memalign(&data, system_page_size(), size) != 0) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  void* data = nullptr;
};

// Reads in flight at which the reader hands the role to an idle filler (measured with fault_bench: 4
// served random 4 KiB faults from 32 threads about a third faster than one filler keeping them all).
constexpr unsigned kHandOnDepth = 4;

// Reads a filler keeps in flight: enough to cover a burst of faults and their read-ahead. Their
// staging buffers are memory beyond the buffer's, so all fillers' together stay within a quarter of
// the buffer (and 8 MiB a filler): a program run in a memory limit sized for its buffer still fits.
unsigned ring_slots(const Config& config) {
  constexpr std::size_t kMostStagingBytes = 8u << 20;
  constexpr std::size_t kMostSlots = 64;
  std::size_t staging = std::min(kMostStagingBytes, config.buffer_bytes() / 4 / config.fillers);
  return static_cast<unsigned>(std::clamp<std::size_t>(staging / config.page_size, 1, kMostSlots));
}

std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

struct FillerPool::Filler {
  Filler(const Config& config, int stop_fd)
      : reads(ring_slots(config), config.page_size, stop_fd),
        pending(ring_slots(config)),
        in_place(config.page_size) {}
  ReadQueue reads;
  std::vector<PendingRead> pending;  // by slot
  ReadQueue::Events events;
  AlignedBuffer in_place;            // for reads done in place
  char* in_place_buffer() const { return static_cast<char*>(in_place.data); }
  bool can_start() const { return !reads.available() || reads.has_free_slot(); }
};

FillerPool::FillerPool(const Config& config, Userfaultfd& uffd, Paging& paging, const RegionTable& regions,
                       StatsCounters& stats)
    : config_(config), uffd_(uffd), paging_(paging), regions_(regions), stats_(stats) {
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
  speculative_.push_back(std::move(page));
  if (idle_fillers_ > 0) idle_.notify_one();
}

void FillerPool::serve() {
  // Set up here, not by the constructor: a ring takes submissions only from the thread that made it.
  std::unique_ptr<Filler> filler;
  std::vector<uffd_msg> messages;
  std::vector<Fault> batch;
  try {
    filler = std::make_unique<Filler>(config_, stop_event_);
    messages.resize(config_.max_fault_events);
    batch.reserve(messages.size());
  } catch (const std::bad_alloc&) {
    report_setup(std::make_exception_ptr(std::system_error(
        ENOMEM, std::generic_category(),
        "allocating a filler's read buffers (pages of " + std::to_string(config_.page_size) + " bytes)")));
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
      start_fault(self, fault, true);
      lock.lock();
      may_lead = true;
      continue;
    }
    if (can_start && may_lead && !reader_active_) {
      reader_active_ = true;
      if (lead(self, lock, messages, batch)) break;
      may_lead = false;
      continue;
    }
    may_lead = true;
    if (can_start && !speculative_.empty()) {
      PageRef page = std::move(speculative_.front());
      speculative_.pop_front();
      lock.unlock();
      start_speculative(self, page, true);
      page.region.reset();
      lock.lock();
      continue;
    }
    if (self.reads.in_flight()) {
      lock.unlock();
      collect(self, true, false);
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
  while (self.reads.in_flight()) collect(self, true, false);
}

bool FillerPool::lead(Filler& self, std::unique_lock<std::mutex>& lock, std::vector<uffd_msg>& messages,
                      std::vector<Fault>& batch) {
  auto hand_on = [&](bool burst) {
    reader_active_ = false;
    if (idle_fillers_ == 0) return;
    if (burst) idle_.notify_all();
    else idle_.notify_one();
  };
  for (;;) {
    // Start queued read-ahead while the ring has room; a page to read in place goes to the followers.
    while (self.reads.has_free_slot() && !speculative_.empty()) {
      PageRef page = std::move(speculative_.front());
      speculative_.pop_front();
      lock.unlock();
      bool started = start_speculative(self, page, false);
      lock.lock();
      if (!started) {
        speculative_.push_front(std::move(page));
        break;
      }
    }
    // With a few reads in flight, an idle filler takes the next faults: completing reads (copying
    // and waking the faulting threads) then runs on every core, not in this thread alone.
    const bool busy = self.reads.in_flight_count() >= kHandOnDepth && idle_fillers_ > 0;
    if (self.reads.available() && (!self.reads.has_free_slot() || busy)) {
      hand_on(false);
      return false;
    }
    // Wait on the userfaultfd only when there is no read-ahead to do meanwhile.
    const bool wait = speculative_.empty();
    lock.unlock();
    ReadResult result = read_faults(self, messages, batch, wait);
    lock.lock();
    if (result == ReadResult::kStopped) {
      reader_active_ = false;
      return true;
    }
    if (result == ReadResult::kNothing) {
      if (wait) continue;  // reads completed; their slots are free again
      hand_on(false);      // read-ahead waits that this ring cannot take: do it as a follower
      return false;
    }
    lock.unlock();
    std::size_t in_place = 0;
    for (const Fault& fault : batch)
      if (!start_fault(self, fault, false)) batch[in_place++] = fault;
    batch.resize(in_place);
    self.reads.submit();
    // Keeping the role for one fast read in place costs less than handing it on.
    const bool keep = batch.empty() || (batch.size() == 1 && fills_are_fast());
    if (keep && !batch.empty()) start_fault(self, batch.front(), true);
    lock.lock();
    if (keep) continue;
    // Reads in place are slow, or a burst of them: hand the role and the rest of the burst on.
    faults_.insert(faults_.end(), batch.begin() + 1, batch.end());
    hand_on(batch.size() > 1);
    lock.unlock();
    start_fault(self, batch.front(), true);
    lock.lock();
    return false;
  }
}

FillerPool::ReadResult FillerPool::read_faults(Filler& self, std::vector<uffd_msg>& messages,
                                               std::vector<Fault>& faults, bool wait) {
  pollfd fds[2] = {{uffd_.fd(), POLLIN, 0}, {stop_event_, POLLIN, 0}};
  for (;;) {
    ssize_t n = read(uffd_.fd(), messages.data(), messages.size() * sizeof(uffd_msg));
    if (n > 0) {
      auto now = std::chrono::steady_clock::now();
      faults.clear();
      for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(uffd_msg); ++i) {
        if (messages[i].event != UFFD_EVENT_PAGEFAULT) continue;
        const pid_t thread = uffd_.has_thread_id() ? static_cast<pid_t>(messages[i].arg.pagefault.feat.ptid) : 0;
        faults.push_back({static_cast<std::uintptr_t>(messages[i].arg.pagefault.address),
                          messages[i].arg.pagefault.flags, thread, now});
      }
      if (!faults.empty()) return ReadResult::kFaults;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return ReadResult::kStopped;
    if (!wait) return ReadResult::kNothing;
    if (self.reads.available()) {
      // One sleep for whichever comes first: a fault, a read of this filler completing, the stop.
      if (collect(self, true, true)) return ReadResult::kStopped;
      if (!self.events.reads.empty()) return ReadResult::kNothing;
      continue;
    }
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return ReadResult::kStopped;
    if (fds[1].revents != 0) return ReadResult::kStopped;
  }
}

bool FillerPool::start_fault(Filler& self, const Fault& fault, bool may_block) {
  const void* address = reinterpret_cast<const void*>(fault.address);
  RegionPtr region = regions_.find(address);
  if (!region) return true;  // unmapped meanwhile: the faulting access is the program's own error
  std::uint64_t page = region->page_of(address);
  if (fault.flags & UFFD_PAGEFAULT_FLAG_WP) {
    StatsCounters::add(stats_.write_faults);
    paging_.resolve_write(*region, page);
    record_service(fault.read_at);
    return true;
  }
  const FillRequest request{(fault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0, true, fault.thread};
  Start how = queue_fill(self, region, page, request, fault.read_at);
  if (how == Start::kInPlace && !may_block) return false;
  StatsCounters::add(request.for_write ? stats_.write_faults : stats_.read_faults);
  queue_read_ahead(region, page);
  if (how == Start::kQueued) return true;  // its service time is recorded when the read completes
  if (how == Start::kInPlace) fill_in_place(self, region, page, request);
  else wake_unless_filling(*region, page);
  record_service(fault.read_at);
  return true;
}

bool FillerPool::start_speculative(Filler& self, const PageRef& page, bool may_block) {
  if (page.region->state(page.page) != PageState::kAbsent) return true;
  const FillRequest request{false, false, 0};
  Start how = queue_fill(self, page.region, page.page, request, std::chrono::steady_clock::now());
  if (how != Start::kInPlace) return true;
  if (!may_block) return false;
  paging_.fill(page.region, page.page, request, self.in_place_buffer());
  return true;
}

FillerPool::Start FillerPool::queue_fill(Filler& self, const RegionPtr& region, std::uint64_t page,
                                         const FillRequest& request, std::chrono::steady_clock::time_point read_at) {
  if (!self.reads.has_free_slot()) return Start::kInPlace;
  unsigned slot = self.reads.acquire();
  Store::FileExtent extent{};
  if (!region->store->locate(self.reads.buffer(slot), region->page_size, region->page_offset(page), extent)) {
    self.reads.release(slot);
    return Start::kInPlace;
  }
  // A fault that finds no room has been failed (SIGBUS) by claim: nothing more to do for it.
  if (paging_.claim(*region, page, request, [&] { return reserve_slot(self); }) != Paging::Claim::kClaimed) {
    self.reads.release(slot);
    return Start::kNotNeeded;
  }
  self.pending[slot] = PendingRead{region, page, request, read_at, extent.length};
  self.reads.read(slot, extent.fd, extent.offset, extent.length);
  return Start::kQueued;
}

void FillerPool::fill_in_place(Filler& self, const RegionPtr& region, std::uint64_t page,
                               const FillRequest& request) {
  auto fill_start = std::chrono::steady_clock::now();
  if (paging_.fill(region, page, request, self.in_place_buffer())) {
    std::uint64_t ns = nanoseconds_since(fill_start);
    std::uint64_t average = fill_ns_average_.load(std::memory_order_relaxed);
    fill_ns_average_.store(average - average / 8 + ns / 8, std::memory_order_relaxed);
  } else {
    wake_unless_filling(*region, page);
  }
}

bool FillerPool::reserve_slot(Filler& self) {
  while (!paging_.try_reserve_slot()) {
    if (!self.reads.in_flight()) return paging_.reserve_slot();
    collect(self, true, false);
  }
  return true;
}

bool FillerPool::collect(Filler& self, bool wait, bool watch_faults) {
  self.reads.collect(wait, watch_faults ? uffd_.fd() : -1, self.events);
  for (const ReadQueue::Completion& completion : self.events.reads) finish_read(self, completion);
  return self.events.stop;
}

void FillerPool::finish_read(Filler& self, const ReadQueue::Completion& completion) {
  PendingRead& read = self.pending[completion.slot];
  char* data = self.reads.buffer(completion.slot);
  Store& store = *read.region->store;
  const std::uint64_t offset = read.region->page_offset(read.page);
  ssize_t got = completion.result;
  if (got < 0) {
    errno = -completion.result;
    // A fault's read is tried once more, in place; read-ahead leaves the page to a fault.
    if (read.request.demand) got = Paging::read_store(store, data, read.region->page_size, offset, 1);
  } else if (static_cast<std::size_t>(got) < read.requested) {
    // Short: the end of the file, or a read cut short; the store reads the rest (or nothing).
    ssize_t rest = store.read(data + got, read.requested - got, offset + got);
    got = rest < 0 ? -1 : got + rest;
  }
  paging_.finish(read.region, read.page, read.request, data, got);
  if (read.request.demand) record_service(read.read_at);
  else continue_read_ahead(read.region, read.page);
  read.region.reset();
  self.reads.release(completion.slot);
}

// A fault on a page that another read is bringing in waits for that read's copy, which wakes it;
// waking it now would only make it fault again.
void FillerPool::wake_unless_filling(const Region& region, std::uint64_t page) {
  if (region.state(page) != PageState::kFilling) uffd_.wake(region.page_address(page), region.page_size);
}

void FillerPool::record_service(std::chrono::steady_clock::time_point read_at) {
  stats_.fault_service.record(nanoseconds_since(read_at));
}

bool FillerPool::fills_are_fast() const {
  // About what waking a sleeping thread costs on a virtual machine.
  constexpr std::uint64_t kWakeUpNs = 15000;
  return fill_ns_average_.load(std::memory_order_relaxed) < kWakeUpNs;
}

// Queued as the faulting page is read, so that its following pages are read meanwhile.
void FillerPool::queue_read_ahead(const RegionPtr& region, std::uint64_t page) {
  if (config_.read_ahead == 0) return;
  std::uint64_t last = std::min<std::uint64_t>(page + config_.read_ahead, region->page_count - 1);
  std::lock_guard<std::mutex> lock(mutex_);
  region->read_ahead.fault(page);
  const std::size_t queued = speculative_.size();
  for (std::uint64_t next = page + 1; next <= last; ++next)
    if (region->state(next) == PageState::kAbsent) speculative_.push_back(PageRef{region, next});
  if (speculative_.size() > queued && idle_fillers_ > 0) idle_.notify_all();
}

void FillerPool::continue_read_ahead(const RegionPtr& region, std::uint64_t page) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t next;
  if (!region->read_ahead.next_after(page, next) || next >= region->page_count) return;
  if (region->state(next) != PageState::kAbsent) return;
  speculative_.push_back(PageRef{region, next});
  if (idle_fillers_ > 0) idle_.notify_one();
}

}  // namespace autopager
