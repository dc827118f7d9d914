// The timed loop of the workloads that count operations (lookups): a fixed number of them, or as many as fit
// in a fixed time. A time-boxed run lasts the same whatever the paging parameters, so a bad setting costs a
// tuner no more than a good one, and every run is long enough to measure.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>

#include "workload.hpp"

namespace workloads {

// Runs operation(j, tally) for j = 0 .. count-1 on every OpenMP thread. Each thread makes its own operation
// with make_operation() (a reader's transaction, say) and tallies into its own Tally, added into `total` at
// the end (Tally needs +=). Returns `count`.
template <typename Tally, typename MakeOperation>
std::uint64_t run_count(std::uint64_t count, Tally& total, const MakeOperation& make_operation) {
#pragma omp parallel
  {
    Tally mine{};
    auto operation = make_operation();
#pragma omp for schedule(dynamic, 256)
    for (std::uint64_t j = 0; j < count; ++j) operation(j, mine);
#pragma omp critical
    total += mine;
  }
  return count;
}

// As run_count, for j = 0, 1, 2, ... in chunks until `seconds` have passed; returns how many ran: exactly the
// operations 0 .. n-1, the same ones as run_count(n).
template <typename Tally, typename MakeOperation>
std::uint64_t run_for(double seconds, Tally& total, const MakeOperation& make_operation) {
  constexpr std::uint64_t kChunk = 64;
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  const Stopwatch timer;
#pragma omp parallel
  {
    Tally mine{};
    auto operation = make_operation();
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t first = next.fetch_add(kChunk, std::memory_order_relaxed);
      for (std::uint64_t j = first; j < first + kChunk; ++j) operation(j, mine);
      if (timer.seconds() >= seconds) stop.store(true, std::memory_order_relaxed);
    }
#pragma omp critical
    total += mine;
  }
  return next.load();
}

// run_for(seconds) when seconds > 0, else run_count(count).
template <typename Tally, typename MakeOperation>
std::uint64_t run_operations(std::uint64_t count, double seconds, Tally& total, const MakeOperation& make_operation) {
  return seconds > 0 ? run_for(seconds, total, make_operation) : run_count(count, total, make_operation);
}

}  // namespace workloads
