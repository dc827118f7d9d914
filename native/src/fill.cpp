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
  void* data = nullptr;
};

}  // namespace

FillerPool::FillerPool(const Config& config, Userfaultfd& uffd, Paging& paging, const RegionTable& regions,
                       StatsCounters& stats)
    : config_(config), uffd_(uffd), paging_(paging), regions_(regions), stats_(stats) {
  stop_event_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_event_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  for (unsigned i = 0; i < config_.fillers; ++i) fillers_.emplace_back([this] { serve(); });
  reader_ = std::thread([this] { read_faults(); });
}

FillerPool::~FillerPool() {
  std::uint64_t one = 1;
  (void)!write(stop_event_, &one, sizeof one);
  reader_.join();
  queue_.stop();
  for (auto& t : fillers_) t.join();
  close(stop_event_);
}

void FillerPool::read_faults() {
  std::vector<uffd_msg> messages(config_.max_fault_events);
  std::vector<FaultWork> batch;
  batch.reserve(messages.size());
  pollfd fds[2] = {{uffd_.fd(), POLLIN, 0}, {stop_event_, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    ssize_t n = read(uffd_.fd(), messages.data(), messages.size() * sizeof(uffd_msg));
    if (n <= 0) continue;  // EAGAIN: another wake-up took it
    auto now = std::chrono::steady_clock::now();
    batch.clear();
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(uffd_msg); ++i) {
      if (messages[i].event != UFFD_EVENT_PAGEFAULT) continue;
      batch.push_back({static_cast<std::uintptr_t>(messages[i].arg.pagefault.address),
                       messages[i].arg.pagefault.flags, now});
    }
    queue_.push_faults(batch.begin(), batch.end());
  }
}

void FillerPool::serve() {
  std::size_t page_size = config_.page_size;
  AlignedBuffer io_buffer(page_size);
  char* buffer = static_cast<char*>(io_buffer.data);
  FaultWork fault{};
  PageRef page{};
  bool is_fault = false;
  while (queue_.pop(&fault, &page, &is_fault)) {
    if (is_fault) {
      serve_fault(fault, buffer);
    } else {
      paging_.fill(page.region, page.page, false, true, buffer);
      page.region.reset();
    }
  }
}

void FillerPool::serve_fault(const FaultWork& fault, char* io_buffer) {
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
    // Not filled here: another fault brought it in first, or the region is closing. Wake the thread;
    // it retries and faults again if it must.
    if (!paging_.fill(region, page, for_write, false, io_buffer))
      uffd_.wake(region->page_address(page), region->page_size);
    for (std::uint64_t next = page + 1; next <= page + config_.read_ahead && next < region->page_count; ++next) {
      if (region->state(next) == PageState::kAbsent) queue_.push_speculative(PageRef{region, next});
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - fault.read_at;
  stats_.fault_service.record(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()));
}

}  // namespace autopager
