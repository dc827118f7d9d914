// A filler's reads in flight, on its own io_uring. The filler queues a read into one of its slots
// (read_slots.hpp), submits its reads together and sleeps once for whatever
// completes first. The same wait can watch the userfaultfd, so a filler with reads in flight still
// reads new faults as they come. Where io_uring is unavailable (built without liburing,
// kernel.io_uring_disabled, a seccomp filter) available() is false and the filler reads in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace autopager {

// Whether a call sleeps until there is something for it.
enum class Wait { kNo, kYes };

class ReadQueue {
 public:
  struct Completion {
    unsigned slot;  // as given to read()
    int result;  // bytes read, or -errno
  };
  struct Events {
    std::vector<Completion> reads;
    bool stop = false;  // the stop event fired; stays set
  };

  // At most `depth` reads in flight; `stop_fd`: an eventfd whose readability ends every wait.
  ReadQueue(unsigned depth, int stop_fd);
  ~ReadQueue();
  ReadQueue(const ReadQueue&) = delete;
  ReadQueue& operator=(const ReadQueue&) = delete;

  bool available() const { return ring_ != nullptr; }
  bool in_flight() const { return in_flight_ > 0; }
  unsigned in_flight_count() const { return in_flight_; }

  // Queues a read of `length` bytes of `fd` at `offset` into `buffer`, slot `slot`'s; the next
  // collect() submits it.
  void read(unsigned slot, char* buffer, int fd, std::uint64_t offset, std::size_t length);

  // Hands the queued reads to the kernel now.
  void submit();
  // Submits what is queued and gathers completions into `events.reads` (cleared first). With Wait::kYes,
  // sleeps until there is at least one event; `watch_fd` (>= 0) is watched for readability meanwhile.
  void collect(Wait wait, int watch_fd, Events& events);

 private:
  struct Ring;  // liburing's, when built with it

  std::unique_ptr<Ring> ring_;
  unsigned in_flight_ = 0;
};

}  // namespace autopager
