// The application: threads touching a mapping in random or sequential order until a deadline.
#pragma once

#include <cstdint>

#include "mapping.hpp"
#include "options.hpp"

namespace bench {

struct AccessResult {
  double seconds = 0;            // from the start of the touches to the end of the last thread
  std::uint64_t pages = 0;       // distinct units touched (each needs one fill or one kernel read)
  std::uint64_t bytes = 0;       // bytes of the mapping covered by the touches
  std::uint64_t checksum = 0;    // sum of the words read, so the reads cannot be elided
  double p50_us = 0;             // random: percentiles of the time one touch took (the fault's round trip)
  double p99_us = 0;
};

// Random: the threads share one random permutation of the mapping's units and touch the first word of
// each, so every touch is a first touch; with `prefetch` B, each thread claims batches of B units and
// prefetches the next batch while it touches the current one.
// Sequential: each thread scans its contiguous share, one word per system page.
AccessResult run_access(Mapping& mapping, const Options& options);

}  // namespace bench
