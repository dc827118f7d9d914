#include <sys/mman.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <thread>
#include <unordered_map>

#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;

// A store written by a user: the pattern, computed, with a count of reads per offset and a delay
// that widens the window in which faulting threads race.
class CountingStore final : public Store {
 public:
  // Counts the reads of each page of `page` bytes (a read-ahead run reads several at once).
  CountingStore(std::uint64_t size, std::size_t page) : size_(size), page_(page) {}
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::uint64_t at = offset; at < offset + n; at += page_) ++reads_[at];
    }
    usleep(200);
    std::size_t count = offset >= size_ ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    for (std::size_t i = 0; i < count; ++i) static_cast<std::uint8_t*>(dst)[i] = pattern_byte(offset + i, 1);
    return static_cast<ssize_t>(count);
  }
  ssize_t write(const void*, std::size_t n, std::uint64_t) override { return static_cast<ssize_t>(n); }
  std::uint64_t size() const override { return size_; }
  std::uint64_t max_reads_of_one_offset() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::uint64_t most = 0;
    for (const auto& entry : reads_) most = std::max(most, entry.second);
    return most;
  }
  std::uint64_t pages_read() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reads_.size();
  }

 private:
  std::uint64_t size_;
  std::size_t page_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::uint64_t> reads_;
};

TEST(Concurrency, ThreadsFaultingTheSamePageCauseOneRead) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 64;
  auto store = std::make_shared<CountingStore>(pages * page, page);
  // Room for every page below the high water mark: no eviction, so a page read twice is a double fill
  // (with eviction, a thread descheduled for long would fault an evicted page again, rightly).
  Pager pager(testing::small_config(page, 2 * pages, 8));
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(store, pages * page, PROT_READ));
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      // All threads walk the same pages; odd threads start one page in, so neighbours race too.
      for (std::uint64_t p = t % 2; p < pages; ++p) {
        std::uint64_t offset = p * page + (t * 97) % page;
        wrong += bytes[offset] != pattern_byte(offset, 1);
      }
    });
  }
  go.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(store->pages_read(), pages);
  EXPECT_EQ(store->max_reads_of_one_offset(), 1u);
  EXPECT_EQ(pager.stats().fills, pages);
  pager.unmap(const_cast<std::uint8_t*>(bytes));
}

TEST(Concurrency, ManyThreadsReadAndWriteUnderEvictionPressure) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 1024;
  testing::ScratchFile file(pages * page, 13);
  Pager pager(testing::small_config(page, 24, 4));
  auto* words = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), pages * page));
  const std::uint64_t count = pages * page / 8;
  const int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Thread t owns the words with i % kThreads == t, spread over every page, so all threads share pages.
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (std::uint64_t i = static_cast<std::uint64_t>(t); i < count; i += kThreads * 3) words[i] += i + 1;
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(pager.unmap(words));
  EXPECT_GT(pager.stats().evictions, 1000u);
  std::vector<std::uint8_t> bytes = file.contents();
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t original = 0;
    for (int b = 7; b >= 0; --b) original = (original << 8) | pattern_byte(8 * i + b, 13);
    std::uint64_t expected = original;
    if (i % (kThreads * 3) < static_cast<std::uint64_t>(kThreads)) expected += 3 * (i + 1);
    std::uint64_t got;
    std::memcpy(&got, bytes.data() + 8 * i, 8);
    wrong += got != expected;
  }
  EXPECT_EQ(wrong, 0u);
}

// Read-ahead keeps fillers busy with speculative fills while faults arrive: the fault-reader role
// must never be left vacant (a regression: every filler asleep, a thread blocked in a fault forever).
TEST(Concurrency, ReadAheadWithFewFillersNeverStallsAFault) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 4 * system_page_size();
  const std::uint64_t pages = 2048;
  testing::ScratchFile file(pages * page, 21);
  Config config = testing::small_config(page, 256, 2);
  config.read_ahead = 4;
  Pager pager(config);
  auto* words = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), pages * page));
  const std::uint64_t count = pages * page / 8;
  // Two threads sweep their halves from both ends at once, reading and writing, as a partition does.
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::uint64_t lo = t * count / 2, hi = (t + 1) * count / 2 - 1;
      for (int sweep = 0; sweep < 3; ++sweep, lo = t * count / 2, hi = (t + 1) * count / 2 - 1) {
        while (lo < hi) {
          std::swap(words[lo], words[hi]);
          lo += 97;
          hi -= 89;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(pager.unmap(words));
  EXPECT_GT(pager.stats().evictions, 1000u);
}

// Unmapping while fills are in flight and evictors drop pages: each page's buffer slot is given back
// once, by whoever drops the page. A slot given back twice would leave the count of resident pages
// wrapped below zero, and every later fault waiting for a slot for ever.
TEST(Concurrency, UnmappingWhilePagesComeAndGoGivesEverySlotBackOnce) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 64;
  testing::ScratchFile file(pages * page, 22);
  Config config = testing::small_config(page, 8, 2);
  config.read_ahead = 4;
  Pager pager(config);
  testing::HangWatchdog watchdog(60, [&] { return "pager statistics: " + pager.stats().to_json(); });
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 150 && !failed; ++round) {
        auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page));
        for (std::uint64_t p = 0; p < pages; ++p) {
          if (bytes[p * page + 5] != pattern_byte(p * page + 5, 22)) failed = true;
          bytes[p * page + 6] = pattern_byte(p * page + 6, 22);  // dirty: evicting it writes it back
        }
        if (!pager.unmap(bytes)) failed = true;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(failed);
  EXPECT_EQ(pager.stats().resident_bytes, 0u);
}

}  // namespace
}  // namespace autopager
