// Progress of a long step (data generation, checks) on stderr, in steps of 10%, shown only for big
// amounts of work so small runs stay quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace workloads {

class Progress {
 public:
  // `total` units of work; `unit_bytes` converts a unit to bytes to decide whether it is big.
  Progress(std::string label, std::uint64_t total, std::uint64_t unit_bytes = 1);
  ~Progress();
  // Thread-safe.
  void advance(std::uint64_t done_units);

 private:
  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  int shown_tenths_ = 0;
  bool visible_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

}  // namespace workloads
