#include "read_queue.hpp"

#include <liburing.h>
#include <poll.h>

#include <cerrno>

namespace autopager {
namespace {

constexpr std::uint64_t kWatchTag = ~0ull;
constexpr std::uint64_t kStopTag = ~0ull - 1;

}  // namespace

struct ReadQueue::Ring {
  io_uring ring{};
  bool watching = false;  // a poll on the watched descriptor is armed
  int stop_fd = -1;

  void watch_stop() {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_poll_add(sqe, stop_fd, POLLIN);
    io_uring_sqe_set_data64(sqe, kStopTag);
  }

  io_uring_sqe* next_sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    while (sqe == nullptr) {  // the submission queue is full: hand it to the kernel first
      io_uring_submit(&ring);
      sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
  }
};

ReadQueue::ReadQueue(unsigned depth, int stop_fd) {
  auto ring = std::make_unique<Ring>();
  const unsigned entries = depth + 2;  // the reads, the watched descriptor, the stop event
  if (io_uring_queue_init(entries, &ring->ring, IORING_SETUP_SINGLE_ISSUER) != 0 &&
      io_uring_queue_init(entries, &ring->ring, 0) != 0)
    return;
  ring->stop_fd = stop_fd;
  ring->watch_stop();
  io_uring_submit(&ring->ring);
  ring_ = std::move(ring);
}

ReadQueue::~ReadQueue() {
  if (ring_) io_uring_queue_exit(&ring_->ring);
}

void ReadQueue::read(unsigned slot, char* buffer, int fd, std::uint64_t offset, std::size_t length) {
  io_uring_sqe* sqe = ring_->next_sqe();
  io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(length), offset);
  io_uring_sqe_set_data64(sqe, slot);
  ++in_flight_;
}

void ReadQueue::submit() {
  if (ring_ && in_flight_ > 0) io_uring_submit(&ring_->ring);
}

void ReadQueue::collect(Wait wait, int watch_fd, Events& events) {
  events.reads.clear();
  // The stop event completes once: after it only reads in flight can end a wait. (A caller that waited
  // for a free slot may have taken that completion and left events.stop for its next call.)
  if (events.stop && in_flight_ == 0) wait = Wait::kNo;
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
      // Only the event itself stops the filler; a poll that ended otherwise (cancelled, an error) is
      // armed again: a false stop would end every filler and leave each later fault waiting for ever.
      if (cqe->res > 0 && (cqe->res & POLLIN) != 0) events.stop = true;
      else ring_->watch_stop();
    } else {
      --in_flight_;
      events.reads.push_back({static_cast<unsigned>(tag), cqe->res});
    }
  }
  io_uring_cq_advance(ring, seen);
}

}  // namespace autopager
