// The live counters behind Stats: relaxed atomics bumped on the hot paths, and a latency histogram
// with logarithmic buckets (8 per power of two) from which the p99 is read.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "autopager/stats.hpp"

namespace autopager {

class LatencyHistogram {
 public:
  void record(std::uint64_t nanoseconds);
  double mean_us() const;
  double percentile_us(double p) const;

 private:
  static constexpr int kSubBuckets = 8;
  static constexpr int kBuckets = 64 * kSubBuckets;
  static int bucket_of(std::uint64_t ns);
  static double lower_bound_of(int bucket);
  std::array<std::atomic<std::uint64_t>, kBuckets> counts_{};
  std::atomic<std::uint64_t> total_ns_{0};
  std::atomic<std::uint64_t> samples_{0};
};

struct StatsCounters {
  std::atomic<std::uint64_t> read_faults{0};
  std::atomic<std::uint64_t> write_faults{0};
  std::atomic<std::uint64_t> fills{0};
  std::atomic<std::uint64_t> read_around_pages{0};
  std::atomic<std::uint64_t> reads{0};
  std::atomic<std::uint64_t> bytes_read{0};
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::uint64_t> victim_hits{0};
  std::atomic<std::uint64_t> write_backs{0};
  std::atomic<std::uint64_t> bytes_written{0};
  std::atomic<std::uint64_t> write_errors{0};
  std::atomic<std::uint64_t> read_errors{0};
  std::atomic<std::int64_t> dirty_pages{0};
  LatencyHistogram fault_service;

  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  Stats snapshot(std::uint64_t resident_bytes) const;
};

}  // namespace autopager
