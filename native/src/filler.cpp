#include "filler.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "filler_pool.hpp"

namespace autopager {
namespace {

std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

Filler::Filler(FillerPool& pool, const Config& config, const PageMemory& memory, Userfaultfd& uffd, Paging& paging,
               const RegionTable& regions, StatsCounters& stats, int stop_event)
    : pool_(pool),
      uffd_(uffd),
      paging_(paging),
      regions_(regions),
      stats_(stats),
      stop_event_(stop_event),
      reads_(memory.read_slots + memory.run_slots, stop_event),
      slots_(reads_.available() ? memory.read_slots : 1, config.page_size),
      run_read_base_(memory.read_slots),
      pending_(memory.read_slots + memory.run_slots),
      messages_(config.max_fault_events) {
  if (memory.run_slots > 0) run_slots_.emplace(reads_.available() ? memory.run_slots : 1, memory.run_bytes);
  pool_.add_slots(&slots_);
  if (run_slots_) pool_.add_slots(&*run_slots_);
}

Filler::~Filler() {
  pool_.remove_slots(&slots_);
  if (run_slots_) pool_.remove_slots(&*run_slots_);
}

Filler::ReadResult Filler::read_faults(std::vector<Fault>& faults, Wait wait) {
  pollfd fds[2] = {{uffd_.fd(), POLLIN, 0}, {stop_event_, POLLIN, 0}};
  for (;;) {
    ssize_t n = read(uffd_.fd(), messages_.data(), messages_.size() * sizeof(uffd_msg));
    if (n > 0) {
      auto now = std::chrono::steady_clock::now();
      faults.clear();
      for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(uffd_msg); ++i) {
        if (messages_[i].event != UFFD_EVENT_PAGEFAULT) continue;
        const pid_t thread = uffd_.has_thread_id() ? static_cast<pid_t>(messages_[i].arg.pagefault.feat.ptid) : 0;
        const std::uint64_t flags = messages_[i].arg.pagefault.flags;
        // Counted as read: a fault may be answered (a victim installed, a fill finished by another filler)
        // before the filler that took it moves on, and a program that sees its access done sees it counted.
        StatsCounters::add((flags & (UFFD_PAGEFAULT_FLAG_WRITE | UFFD_PAGEFAULT_FLAG_WP)) != 0 ? stats_.write_faults
                                                                                                : stats_.read_faults);
        faults.push_back({static_cast<std::uintptr_t>(messages_[i].arg.pagefault.address), flags, thread, now});
      }
      if (!faults.empty()) return ReadResult::kFaults;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      const int err = errno;
      if (stop_requested()) return ReadResult::kStopped;
      report_read_error(err);  // and wait as before: a fault that is never read would wait for ever
    }
    if (wait == Wait::kNo) return ReadResult::kNothing;
    if (reads_.available()) {
      // One sleep for whichever comes first: a fault, a read of this filler completing, the stop.
      if (collect(Wait::kYes, WatchFaults::kYes)) return ReadResult::kStopped;
      if (!events_.reads.empty()) return ReadResult::kNothing;
      continue;
    }
    if (poll(fds, 2, -1) < 0 && errno != EINTR && stop_requested()) return ReadResult::kStopped;
    if (fds[1].revents & POLLIN) return ReadResult::kStopped;
  }
}

bool Filler::stop_requested() const {
  pollfd stop{stop_event_, POLLIN, 0};
  return poll(&stop, 1, 0) == 1 && (stop.revents & POLLIN) != 0;
}

void Filler::report_read_error(int err) {
  if (!reported_read_error_)
    std::fprintf(stderr, "autopager: reading the userfaultfd's fault events failed: %s; trying again\n",
                 std::strerror(err));
  reported_read_error_ = true;
}

bool Filler::start_fault(const Fault& fault, MayBlock may_block) {
  const void* address = reinterpret_cast<const void*>(fault.address);
  RegionPtr region = regions_.find(address);
  if (!region) return true;  // unmapped meanwhile: the faulting access is the program's own error
  std::uint64_t page = region->page_of(address);
  if (fault.flags & UFFD_PAGEFAULT_FLAG_WP) {
    paging_.resolve_write(*region, page);
    record_service(fault.read_at);
    return true;
  }
  const bool by_write = (fault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
  const FillRequest request = FillRequest::fault(by_write, fault.thread);
  Start how = queue_fill(region, page, request, fault.read_at);
  if (how == Start::kInPlace && may_block == MayBlock::kNo) return false;
  pool_.queue_read_ahead(region, page, request);
  if (how == Start::kQueued) return true;  // its service time is recorded when the read completes
  if (how == Start::kNotNeeded || !fill_in_place(region, page, request)) paging_.wake_unless_filling(*region, page);
  record_service(fault.read_at);
  return true;
}

bool Filler::start_speculative(const PageRun& run, MayBlock may_block) {
  if (run_slots_ && run.count > 1) {
    if (may_block == MayBlock::kNo && (!reads_.available() || !run_slots_->has_free())) return false;
    // Every run slot taken is a read in flight: one completes.
    while (!run_slots_->has_free()) collect(Wait::kYes, WatchFaults::kNo);
    start_run(run);
    return true;
  }
  if (run.region->state(run.lead) != PageState::kAbsent) return true;
  const FillRequest request = FillRequest::speculative();
  Start how = queue_fill(run.region, run.lead, request, std::chrono::steady_clock::now());
  if (how != Start::kInPlace) return true;
  if (may_block == MayBlock::kNo) return false;
  fill_in_place(run.region, run.lead, request);
  return true;
}

void Filler::start_run(const PageRun& run) {
  Region& region = *run.region;
  std::uint64_t first = 0;
  const std::uint64_t count = paging_.claim_run(region, run.lead, run.direction, run.count, first);
  if (count == 0) return;
  // Checked once the pages are claimed, so that none can be evicted meanwhile: a run whose filler stalled
  // between taking and claiming it would otherwise bring back pages the scan has passed.
  if (pool_.read_ahead_passed(run, first, count)) {
    paging_.finish_run(run.region, first, count, nullptr, 0);  // nothing read: gives the pages back
    return;
  }
  const unsigned slot = run_slots_->acquire();
  char* data = run_slots_->buffer(slot);
  const std::size_t bytes = count * region.page_size;
  Store::FileExtent extent{};
  // A store the ring cannot read (memory, a read across two files) is read in place.
  if (reads_.available() && region.store->locate(data, bytes, region.page_offset(first), extent)) {
    const unsigned id = run_read_base_ + slot;
    pending_[id] = PendingRead{run.region, first, count, run.lead, FillRequest::speculative(),
                               std::chrono::steady_clock::now(), extent.length};
    reads_.read(id, data, extent.fd, extent.offset, extent.length);
    return;
  }
  const ssize_t got = Paging::read_store(*region.store, data, bytes, region.page_offset(first), 1);
  paging_.finish_run(run.region, first, count, data, got);
  release_read(*run_slots_, slot);
  pool_.continue_read_ahead(run.region, run.lead);
}

Filler::Start Filler::queue_fill(const RegionPtr& region, std::uint64_t page, const FillRequest& request,
                                 std::chrono::steady_clock::time_point read_at) {
  if (!has_free_slot()) return Start::kInPlace;
  unsigned slot = slots_.acquire();
  Store::FileExtent extent{};
  if (!region->store->locate(slots_.buffer(slot), region->page_size, region->page_offset(page), extent)) {
    slots_.release_unused(slot);
    return Start::kInPlace;
  }
  // A fault that finds no room has been failed (SIGBUS) by claim: nothing more to do for it.
  if (paging_.claim(*region, page, request, [&](const Region& r) { return reserve_slot(r); }) !=
      Paging::Claim::kClaimed) {
    slots_.release_unused(slot);
    return Start::kNotNeeded;
  }
  pending_[slot] = PendingRead{region, page, 1, page, request, read_at, extent.length};
  reads_.read(slot, slots_.buffer(slot), extent.fd, extent.offset, extent.length);
  return Start::kQueued;
}

bool Filler::fill_in_place(const RegionPtr& region, std::uint64_t page, const FillRequest& request) {
  const unsigned slot = take_slot();
  const auto fill_start = std::chrono::steady_clock::now();
  // While it waits for a buffer slot, the filler completes its reads in flight: their pages hold slots
  // too, and an unmap waits for them.
  const bool filled =
      paging_.fill(region, page, request, slots_.buffer(slot), [this](const Region& r) { return reserve_slot(r); });
  release_read(slots_, slot);
  if (filled && request.demand) pool_.record_fill_time(nanoseconds_since(fill_start));
  return filled;
}

unsigned Filler::take_slot() {
  // Every slot taken is a read in flight (or queued, which collect submits): one completes.
  while (!slots_.has_free()) collect(Wait::kYes, WatchFaults::kNo);
  return slots_.acquire();
}

bool Filler::reserve_slot(const Region& region) {
  while (!paging_.try_reserve_slot(region.units)) {
    if (region.closing.load()) return false;  // its release waits for this claim
    if (!reads_.in_flight()) return paging_.reserve_slot(region);
    collect(Wait::kYes, WatchFaults::kNo);
  }
  return true;
}

bool Filler::collect(Wait wait, WatchFaults watch_faults) {
  reads_.collect(wait, watch_faults == WatchFaults::kYes ? uffd_.fd() : -1, events_);
  for (const ReadQueue::Completion& completion : events_.reads) finish_read(completion);
  return events_.stop;
}

void Filler::finish_read(const ReadQueue::Completion& completion) {
  PendingRead& read = pending_[completion.slot];
  const bool run_slot = completion.slot >= run_read_base_;
  char* data = run_slot ? run_slots_->buffer(completion.slot - run_read_base_) : slots_.buffer(completion.slot);
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
  if (run_slot) paging_.finish_run(read.region, read.page, read.count, data, got);
  else paging_.finish(read.region, read.page, read.request, data, got);
  if (read.request.demand) record_service(read.read_at);
  else pool_.continue_read_ahead(read.region, read.lead);
  read.region.reset();
  if (run_slot) release_read(*run_slots_, completion.slot - run_read_base_);
  else release_read(slots_, completion.slot);
}

void Filler::release_read(ReadSlots& slots, unsigned slot) {
  slots.release(slot, [this] { return paging_.slots_transient(); });
  if (paging_.claim_slot_flush()) {
    pool_.give_back_idle_slots();
    paging_.give_back_idle_staging();
  }
}

void Filler::record_service(std::chrono::steady_clock::time_point read_at) {
  stats_.fault_service.record(nanoseconds_since(read_at));
}

}  // namespace autopager
