// Whether an eviction's batch parks its pages in the victim buffer: a park costs a UFFDIO_MOVE a page (and the
// victim's drop later), a hit saves a read, so victims pay only while they are hit. Batches start parking;
// after each window of evictions (kWindowTurns times the victims' capacity in units) the hits on the window's
// parks decide: under one hit in kPaysAtOne parks (a scan: no page comes back before the victims turn over) one
// batch in kSampleEvery parks, enough to see hits come back, and every batch again once a window has them. A
// batch that does not park drops as many of the oldest victims, so victims stay the pages evicted last.
#pragma once

#include <cstdint>
#include <mutex>

namespace autopager {

class VictimAdmission {
 public:
  static constexpr std::uint64_t kPaysAtOne = 32;
  static constexpr std::uint64_t kSampleEvery = 16;
  static constexpr std::uint64_t kWindowTurns = 4;

  explicit VictimAdmission(std::uint64_t capacity_units) : window_(kWindowTurns * capacity_units) {}

  // Whether this batch parks: every one, or one in kSampleEvery while victims are not hit.
  bool admits_batch() {
    std::lock_guard<std::mutex> lock(mutex_);
    return parking_all_ || batches_++ % kSampleEvery == 0;
  }
  // A batch evicted these units, parking some of them.
  void evicted(std::uint64_t units, std::uint64_t parked) {
    std::lock_guard<std::mutex> lock(mutex_);
    evicted_ += units;
    parked_ += parked;
    if (evicted_ < window_) return;
    if (parked_ > 0) parking_all_ = hits_ * kPaysAtOne >= parked_;
    evicted_ = 0;
    parked_ = 0;
    hits_ = 0;
  }
  void hit(std::uint64_t units) {
    std::lock_guard<std::mutex> lock(mutex_);
    hits_ += units;
  }
  bool parking_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    return parking_all_;
  }

 private:
  const std::uint64_t window_;
  std::mutex mutex_;  // a leaf
  bool parking_all_ = true;
  std::uint64_t batches_ = 0;
  std::uint64_t evicted_ = 0;  // units evicted in this window
  std::uint64_t parked_ = 0;   // of them parked
  std::uint64_t hits_ = 0;    // units of victims hit in this window
};

}  // namespace autopager
