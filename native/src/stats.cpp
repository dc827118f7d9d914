#include <cmath>
#include <sstream>

#include "stats_counters.hpp"

namespace autopager {

int LatencyHistogram::bucket_of(std::uint64_t ns) {
  if (ns < kSubBuckets) return static_cast<int>(ns);
  int exponent = 63 - __builtin_clzll(ns);  // ns >= 8, so exponent >= 3
  int sub = static_cast<int>((ns >> (exponent - 3)) & (kSubBuckets - 1));
  int bucket = (exponent - 2) * kSubBuckets + sub;
  return bucket < kBuckets ? bucket : kBuckets - 1;
}

double LatencyHistogram::lower_bound_of(int bucket) {
  if (bucket < kSubBuckets) return bucket;
  int exponent = bucket / kSubBuckets + 2;
  int sub = bucket % kSubBuckets;
  return std::ldexp(1.0 + sub / static_cast<double>(kSubBuckets), exponent);
}

void LatencyHistogram::record(std::uint64_t ns) {
  counts_[bucket_of(ns)].fetch_add(1, std::memory_order_relaxed);
  total_ns_.fetch_add(ns, std::memory_order_relaxed);
  samples_.fetch_add(1, std::memory_order_relaxed);
}

double LatencyHistogram::mean_us() const {
  std::uint64_t n = samples_.load(std::memory_order_relaxed);
  return n == 0 ? 0.0 : total_ns_.load(std::memory_order_relaxed) / 1000.0 / n;
}

double LatencyHistogram::percentile_us(double p) const {
  std::uint64_t n = samples_.load(std::memory_order_relaxed);
  if (n == 0) return 0.0;
  std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * n));
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[b].load(std::memory_order_relaxed);
    if (seen >= rank) return lower_bound_of(b + 1) / 1000.0;  // the bucket's upper edge
  }
  return lower_bound_of(kBuckets) / 1000.0;
}

Stats StatsCounters::snapshot(std::uint64_t resident_bytes) const {
  Stats s;
  s.read_faults = read_faults.load(std::memory_order_relaxed);
  s.write_faults = write_faults.load(std::memory_order_relaxed);
  s.fills = fills.load(std::memory_order_relaxed);
  s.read_around_pages = read_around_pages.load(std::memory_order_relaxed);
  s.reads = reads.load(std::memory_order_relaxed);
  s.bytes_read = bytes_read.load(std::memory_order_relaxed);
  s.evictions = evictions.load(std::memory_order_relaxed);
  s.victim_hits = victim_hits.load(std::memory_order_relaxed);
  s.write_backs = write_backs.load(std::memory_order_relaxed);
  s.bytes_written = bytes_written.load(std::memory_order_relaxed);
  s.write_errors = write_errors.load(std::memory_order_relaxed);
  s.read_errors = read_errors.load(std::memory_order_relaxed);
  s.resident_bytes = resident_bytes;
  std::int64_t dirty = dirty_pages.load(std::memory_order_relaxed);
  s.dirty_pages = dirty > 0 ? static_cast<std::uint64_t>(dirty) : 0;
  s.fault_service_mean_us = fault_service.mean_us();
  s.fault_service_p99_us = fault_service.percentile_us(99);
  return s;
}

std::string Stats::to_json() const {
  std::ostringstream out;
  out << "{\"page_size\": " << page_size << ", \"read_only_page_size\": " << read_only_page_size
      << ", \"read_ahead_run_bytes\": " << read_ahead_run_bytes
      << ", \"read_faults\": " << read_faults << ", \"write_faults\": " << write_faults << ", \"fills\": " << fills
      << ", \"read_around_pages\": " << read_around_pages
      << ", \"reads\": " << reads
      << ", \"bytes_read\": " << bytes_read << ", \"evictions\": " << evictions << ", \"write_backs\": " << write_backs
      << ", \"bytes_written\": " << bytes_written << ", \"write_errors\": " << write_errors << ", \"read_errors\": " << read_errors
      << ", \"resident_bytes\": " << resident_bytes << ", \"peak_resident_bytes\": " << peak_resident_bytes
      << ", \"dirty_pages\": " << dirty_pages
      << ", \"policy_refaults\": " << policy_refaults << ", \"policy_promotions\": " << policy_promotions
      << ", \"policy_second_chances\": " << policy_second_chances << ", \"policy_demotions\": " << policy_demotions
      << ", \"victim_hits\": " << victim_hits
      << ", \"fault_service_mean_us\": " << fault_service_mean_us
      << ", \"fault_service_p99_us\": " << fault_service_p99_us << "}";
  return out.str();
}

}  // namespace autopager
