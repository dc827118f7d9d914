#include "access.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

inline std::uint64_t touch(const char* p) { return *reinterpret_cast<const volatile std::uint64_t*>(p); }

// Holds the threads until every one is ready, then lets them go at once.
class StartGate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    open_cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    open_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable open_cv_;
  bool open_ = false;
};

struct ThreadTally {
  std::uint64_t pages = 0;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;
  std::vector<float> touch_us;  // random: one entry a touch
};

double percentile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[static_cast<std::size_t>(k)];
}

// Hands out consecutive slices of the shared permutation.
class Claims {
 public:
  Claims(std::size_t units, unsigned seed) : order_(units) {
    std::iota(order_.begin(), order_.end(), 0);
    std::shuffle(order_.begin(), order_.end(), std::mt19937_64(seed));
  }
  // [first, last) indexes into the permutation; empty when it is used up.
  std::pair<std::size_t, std::size_t> claim(std::size_t count) {
    const std::size_t first = std::min(next_.fetch_add(count, std::memory_order_relaxed), order_.size());
    return {first, std::min(first + count, order_.size())};
  }
  std::size_t unit_at(std::size_t i) const { return order_[i]; }

 private:
  std::vector<std::size_t> order_;
  std::atomic<std::size_t> next_{0};
};

void random_thread(Mapping& m, Claims& claims, unsigned batch, Clock::time_point deadline, ThreadTally& t) {
  const std::size_t unit = m.unit();
  std::vector<char*> pages;
  auto prefetch = [&](std::pair<std::size_t, std::size_t> range) {
    pages.clear();
    for (std::size_t i = range.first; i < range.second; ++i) pages.push_back(m.base() + claims.unit_at(i) * unit);
    if (!pages.empty()) m.prefetch(pages.data(), pages.size());
  };
  const std::size_t step = batch ? batch : 1;
  auto current = claims.claim(step);
  if (batch) prefetch(current);
  while (current.first < current.second) {
    auto next = claims.claim(step);
    if (batch) prefetch(next);
    for (std::size_t i = current.first; i < current.second; ++i) {
      const auto t0 = Clock::now();
      if (t0 >= deadline) return;
      t.checksum += touch(m.base() + claims.unit_at(i) * unit);
      t.touch_us.push_back(std::chrono::duration<float, std::micro>(Clock::now() - t0).count());
      ++t.pages;
      t.bytes += unit;
    }
    current = next;
  }
}

void sequential_thread(Mapping& m, std::size_t first, std::size_t last, Clock::time_point deadline, ThreadTally& t) {
  const std::size_t system_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t check_every = 64 * system_page;
  for (std::size_t offset = first; offset < last; offset += system_page) {
    if (offset % check_every == 0 && Clock::now() >= deadline) break;
    t.checksum += touch(m.base() + offset);
    t.bytes += std::min(system_page, last - offset);
  }
  t.pages = (t.bytes + m.unit() - 1) / m.unit();
}

}  // namespace

AccessResult run_access(Mapping& m, const Options& o) {
  const std::size_t units = m.length() / m.unit();
  std::unique_ptr<Claims> claims;
  if (o.pattern == Pattern::random) claims = std::make_unique<Claims>(units, o.seed);

  StartGate gate;
  Clock::time_point deadline;
  std::vector<ThreadTally> tallies(o.threads);
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < o.threads; ++i) {
    threads.emplace_back([&, i] {
      gate.wait();
      if (o.pattern == Pattern::random) {
        random_thread(m, *claims, o.prefetch, deadline, tallies[i]);
      } else {
        const std::size_t first = units * i / o.threads * m.unit();
        const std::size_t last = i + 1 == o.threads ? m.length() : units * (i + 1) / o.threads * m.unit();
        sequential_thread(m, first, last, deadline, tallies[i]);
      }
    });
  }
  const auto start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  gate.open();
  for (auto& th : threads) th.join();

  AccessResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<float> touch_us;
  for (auto& t : tallies) {
    r.pages += t.pages;
    r.bytes += t.bytes;
    r.checksum += t.checksum;
    touch_us.insert(touch_us.end(), t.touch_us.begin(), t.touch_us.end());
  }
  r.p50_us = percentile(touch_us, 0.5);
  r.p99_us = percentile(touch_us, 0.99);
  return r;
}

}  // namespace bench
