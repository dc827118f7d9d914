#include "fill.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

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

}  // namespace

FillerPool::FillerPool(const Config& config, Userfaultfd& uffd, Paging& paging, const RegionTable& regions,
                       StatsCounters& stats)
    : config_(config), uffd_(uffd), paging_(paging), regions_(regions), stats_(stats) {
  stop_event_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_event_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  for (unsigned i = 0; i < config_.fillers; ++i) fillers_.emplace_back([this] { serve(); });
}

FillerPool::~FillerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  std::uint64_t one = 1;
  (void)!write(stop_event_, &one, sizeof one);  // wakes the reader
  idle_.notify_all();
  for (auto& t : fillers_) t.join();
  close(stop_event_);
}

void FillerPool::prefetch(PageRef page) {
  std::lock_guard<std::mutex> lock(mutex_);
  speculative_.push_back(std::move(page));
  if (idle_fillers_ > 0) idle_.notify_one();
}

FillerPool::ReadResult FillerPool::read_faults(std::vector<uffd_msg>& messages, std::vector<Fault>& faults,
                                               bool wait) {
  pollfd fds[2] = {{uffd_.fd(), POLLIN, 0}, {stop_event_, POLLIN, 0}};
  for (;;) {
    ssize_t n = read(uffd_.fd(), messages.data(), messages.size() * sizeof(uffd_msg));
    if (n > 0) {
      auto now = std::chrono::steady_clock::now();
      faults.clear();
      for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(uffd_msg); ++i) {
        if (messages[i].event != UFFD_EVENT_PAGEFAULT) continue;
        faults.push_back({static_cast<std::uintptr_t>(messages[i].arg.pagefault.address),
                          messages[i].arg.pagefault.flags, now});
      }
      if (!faults.empty()) return ReadResult::kFaults;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return ReadResult::kStopped;
    if (!wait) return ReadResult::kNothing;
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return ReadResult::kStopped;
    if (fds[1].revents != 0) return ReadResult::kStopped;
  }
}

void FillerPool::serve() {
  AlignedBuffer io(config_.page_size);
  char* io_buffer = static_cast<char*>(io.data);
  std::vector<uffd_msg> messages(config_.max_fault_events);
  std::vector<Fault> batch;
  batch.reserve(messages.size());

  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopped_) {
    if (!faults_.empty()) {
      Fault fault = faults_.front();
      faults_.pop_front();
      lock.unlock();
      serve_fault(fault, io_buffer);
      lock.lock();
      continue;
    }
    if (!reader_active_) {
      reader_active_ = true;
      ReadResult result;
      for (;;) {
        // Wait on the userfaultfd only when there is no read-ahead to do meanwhile.
        bool wait = speculative_.empty();
        lock.unlock();
        result = read_faults(messages, batch, wait);
        if (result != ReadResult::kFaults || batch.size() > 1 || !fills_are_fast()) {
          lock.lock();
          break;
        }
        serve_fault(batch.front(), io_buffer);  // keeping the role costs less than handing it on
        lock.lock();
      }
      reader_active_ = false;
      if (result == ReadResult::kStopped) break;
      if (result == ReadResult::kFaults) {
        faults_.insert(faults_.end(), batch.begin() + 1, batch.end());
        // One idle filler takes over as reader; the others take the rest of the batch.
        if (idle_fillers_ > 0) {
          if (batch.size() > 1) idle_.notify_all();
          else idle_.notify_one();
        }
        lock.unlock();
        serve_fault(batch.front(), io_buffer);
        lock.lock();
        continue;
      }
      // Nothing was pending: hand the role on while this filler does read-ahead.
      if (idle_fillers_ > 0) idle_.notify_one();
    }
    if (!speculative_.empty()) {
      PageRef page = std::move(speculative_.front());
      speculative_.pop_front();
      lock.unlock();
      paging_.fill(page.region, page.page, false, true, io_buffer);
      page.region.reset();
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
}

bool FillerPool::fills_are_fast() const {
  // About what waking a sleeping thread costs on a virtual machine.
  constexpr std::uint64_t kWakeUpNs = 15000;
  return fill_ns_average_.load(std::memory_order_relaxed) < kWakeUpNs;
}

void FillerPool::serve_fault(const Fault& fault, char* io_buffer) {
  const void* address = reinterpret_cast<const void*>(fault.address);
  RegionPtr region = regions_.find(address);
  if (!region) return;  // unmapped meanwhile: the faulting access is the program's own error
  std::uint64_t page = region->page_of(address);
  if (fault.flags & UFFD_PAGEFAULT_FLAG_WP) {
    StatsCounters::add(stats_.write_faults);
    paging_.resolve_write(*region, page);
  } else {
    bool for_write = (fault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
    StatsCounters::add(for_write ? stats_.write_faults : stats_.read_faults);
    queue_read_ahead(region, page);
    auto fill_start = std::chrono::steady_clock::now();
    if (paging_.fill(region, page, for_write, false, io_buffer)) {
      auto ns = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - fill_start).count());
      std::uint64_t average = fill_ns_average_.load(std::memory_order_relaxed);
      fill_ns_average_.store(average - average / 8 + ns / 8, std::memory_order_relaxed);
    } else {
      // Not filled here: another fault brought it in first, or the region is closing. Wake the
      // thread; it retries and faults again if it must.
      uffd_.wake(region->page_address(page), region->page_size);
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - fault.read_at;
  stats_.fault_service.record(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()));
}

// Queued before the faulting page is read, so that idle fillers read the following pages meanwhile.
void FillerPool::queue_read_ahead(const RegionPtr& region, std::uint64_t page) {
  std::uint64_t last = std::min<std::uint64_t>(page + config_.read_ahead, region->page_count - 1);
  if (last <= page) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::uint64_t next = page + 1; next <= last; ++next)
    if (region->state(next) == PageState::kAbsent) speculative_.push_back(PageRef{region, next});
  if (idle_fillers_ > 0) idle_.notify_all();
}

}  // namespace autopager
