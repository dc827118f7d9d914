#include "read_queue.hpp"

#include <liburing.h>
#include <poll.h>
#include <sys/mman.h>

#include <cerrno>
#include <new>

namespace autopager {
namespace {

constexpr std::uint64_t kWatchTag = ~0ull;
constexpr std::uint64_t kStopTag = ~0ull - 1;

// Anonymous memory: a slot costs nothing until a read first lands in it. Large slots get transparent huge
// pages, aligned to them: a direct read of 1 MiB into 256 scattered 4 KiB pages needs more segments than
// a virtio disk takes in one request, and the block layer then splits and requeues it (measured with
// fault_bench: a sequential scan in 1 MiB pages went from 1.1 to 1.5 GB/s).
char* map_staging(std::size_t bytes) {
  constexpr std::size_t kHugePage = 2u << 20;
  const std::size_t mapped = bytes >= kHugePage ? bytes + kHugePage : bytes;
  void* area = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  char* start = static_cast<char*>(area);
  if (mapped == bytes) return start;
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(start) + kHugePage - 1) & ~(kHugePage - 1));
  if (aligned > start) munmap(start, aligned - start);
  if (start + mapped > aligned + bytes) munmap(aligned + bytes, start + mapped - (aligned + bytes));
  madvise(aligned, bytes, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

struct ReadQueue::Ring {
  io_uring ring{};
  bool watching = false;  // a poll on the watched descriptor is armed

  io_uring_sqe* next_sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    while (sqe == nullptr) {  // the submission queue is full: hand it to the kernel first
      io_uring_submit(&ring);
      sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
  }
};

ReadQueue::ReadQueue(unsigned slots, std::size_t slot_size, int stop_fd) : slot_size_(slot_size) {
  auto ring = std::make_unique<Ring>();
  const unsigned entries = slots + 2;  // the reads, the watched descriptor, the stop event
  if (io_uring_queue_init(entries, &ring->ring, IORING_SETUP_SINGLE_ISSUER) != 0 &&
      io_uring_queue_init(entries, &ring->ring, 0) != 0)
    return;
  staging_bytes_ = static_cast<std::size_t>(slots) * slot_size;
  staging_ = map_staging(staging_bytes_);
  if (staging_ == nullptr) {
    io_uring_queue_exit(&ring->ring);
    throw std::bad_alloc();
  }
  for (unsigned slot = slots; slot-- > 0;) free_.push_back(slot);
  io_uring_sqe* sqe = ring->next_sqe();
  io_uring_prep_poll_add(sqe, stop_fd, POLLIN);
  io_uring_sqe_set_data64(sqe, kStopTag);
  io_uring_submit(&ring->ring);
  ring_ = std::move(ring);
}

ReadQueue::~ReadQueue() {
  if (!ring_) return;
  io_uring_queue_exit(&ring_->ring);
  munmap(staging_, staging_bytes_);
}

unsigned ReadQueue::acquire() {
  unsigned slot = free_.back();
  free_.pop_back();
  return slot;
}

void ReadQueue::release(unsigned slot) { free_.push_back(slot); }

void ReadQueue::read(unsigned slot, int fd, std::uint64_t offset, std::size_t length) {
  io_uring_sqe* sqe = ring_->next_sqe();
  io_uring_prep_read(sqe, fd, buffer(slot), static_cast<unsigned>(length), offset);
  io_uring_sqe_set_data64(sqe, slot);
  ++in_flight_;
}

void ReadQueue::submit() {
  if (ring_ && in_flight_ > 0) io_uring_submit(&ring_->ring);
}

void ReadQueue::collect(Wait wait, int watch_fd, Events& events) {
  events.reads.clear();
  io_uring* ring = &ring_->ring;
  if (watch_fd >= 0 && !ring_->watching) {
    io_uring_sqe* sqe = ring_->next_sqe();
    io_uring_prep_poll_add(sqe, watch_fd, POLLIN);
    io_uring_sqe_set_data64(sqe, kWatchTag);
    ring_->watching = true;
  }
  for (;;) {
    int submitted = wait == Wait::kYes ? io_uring_submit_and_wait(ring, 1) : io_uring_submit(ring);
    if (submitted >= 0 || (submitted != -EINTR && submitted != -EAGAIN && submitted != -EBUSY)) break;
  }
  unsigned head;
  unsigned seen = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(ring, head, cqe) {
    ++seen;
    std::uint64_t tag = io_uring_cqe_get_data64(cqe);
    if (tag == kWatchTag) {
      ring_->watching = false;  // the caller reads the userfaultfd next
    } else if (tag == kStopTag) {
      events.stop = true;
    } else {
      --in_flight_;
      events.reads.push_back({static_cast<unsigned>(tag), cqe->res});
    }
  }
  io_uring_cq_advance(ring, seen);
}

}  // namespace autopager
