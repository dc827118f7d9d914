// A write-back that fails is reported and its page kept: flush and unmap (C++ and C) return the error,
// the page stays resident and dirty until a later write-back succeeds, a normal exit with unwritten
// pages says so once and fails, and faults on a buffer full of unwritable pages end in SIGBUS instead of
// waiting forever. A region without write-protect loses no write that races with an eviction, and a
// flush reports an eviction's failed write-back that it came upon. And umap refuses what it cannot serve.
#include <sys/mman.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "fault_injection.hpp"
#include "umap/umap.h"

namespace autopager {
namespace {

using testing::Access;
using testing::FaultyFileStore;
using testing::pattern_byte;
using testing::ScopedEnv;
using testing::ScratchFile;
using testing::small_config;
using testing::SmallTmpfs;
using testing::touch_catching_sigbus;

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::vector<std::uint8_t> bytes;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  bytes.resize(static_cast<std::size_t>(lseek(fd, 0, SEEK_END)));
  if (pread(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) bytes.clear();
  close(fd);
  return bytes;
}

// The value written at byte 11 of page p by the tests below.
std::uint8_t written(std::uint64_t p) { return static_cast<std::uint8_t>(0x80 + p % 100); }

// Bytes of a sparse file of `pages` pages that are not what the tests wrote (`written` at byte 11 of
// each page, zeros elsewhere).
std::uint64_t wrong_bytes(const std::string& path, std::uint64_t pages) {
  const std::size_t page = system_page_size();
  std::vector<std::uint8_t> after = file_bytes(path);
  if (after.size() != pages * page) return pages * page;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < after.size(); ++i) wrong += after[i] != (i % page == 11 ? written(i / page) : 0);
  return wrong;
}

// A sparse file of kPages pages on a tmpfs with room for 8 of them.
class OnAFullTmpfs : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kPages = 64;
  void SetUp() override {
    AUTOPAGER_REQUIRE_TMPFS(fs);
    path = fs.sparse_file("data", kPages * page);
  }
  const std::size_t page = system_page_size();
  SmallTmpfs fs{8 * system_page_size()};
  std::string path;
};

TEST(WriteBackErrors, FlushAndUnmapReportAFailedWriteAndKeepThePages) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 16;
  ScratchFile file(pages * page);
  auto store = std::make_shared<FaultyFileStore>(file.path(), true);
  Pager pager(small_config(page, 64));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, pages * page));
  for (std::uint64_t p = 0; p < pages; ++p) bytes[p * page + 11] = written(p);
  store->fail_writes_with(EIO);
  errno = 0;
  EXPECT_EQ(pager.flush(), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(pager.stats().dirty_pages, pages);
  errno = 0;
  EXPECT_FALSE(pager.unmap(bytes)) << "unmap must not drop pages it could not write";
  EXPECT_EQ(errno, EIO);
  ASSERT_EQ(pager.region_base(bytes), bytes) << "the region stays mapped";
  for (std::uint64_t p = 0; p < pages; ++p) ASSERT_EQ(bytes[p * page + 11], written(p)) << "page " << p;
  EXPECT_EQ(file.contents()[11], pattern_byte(11, 1));

  store->fail_writes_with(0);
  EXPECT_EQ(pager.flush(bytes), 0);
  bytes[5 * page] = 0x55;  // the region still works as before
  ASSERT_TRUE(pager.unmap(bytes));
  std::vector<std::uint8_t> after = file.contents();
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    std::uint8_t expected = i % page == 11 ? written(i / page) : i == 5 * page ? 0x55 : pattern_byte(i, 1);
    wrong += after[i] != expected;
  }
  EXPECT_EQ(wrong, 0u);
}

// Evictions write consecutive dirty pages with one write; where that write fails over a bad block, each
// page is written on its own, so only the page on the bad block stays dirty (and flush reports it).
TEST(WriteBackErrors, APageThatCannotBeWrittenKeepsNoNeighbourDirty) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 256;
  const std::uint64_t bad = 37;
  ScratchFile file(pages * page);
  auto store = std::make_shared<FaultyFileStore>(file.path(), true);
  store->fail_writes_covering(bad * page + 100);
  Config config = small_config(page, 32);
  config.evict_high_water = 90;
  config.evict_low_water = 30;
  Pager pager(config);
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, pages * page));
  for (std::uint64_t p = 0; p < pages; ++p) bytes[p * page + 11] = written(p);
  EXPECT_GT(pager.stats().evictions, pages / 2);
  errno = 0;
  EXPECT_EQ(pager.flush(), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(pager.stats().dirty_pages, 1u);
  std::vector<std::uint8_t> after = file.contents();
  for (std::uint64_t p = 0; p < pages; ++p)
    EXPECT_EQ(after[p * page + 11], p == bad ? pattern_byte(bad * page + 11, 1) : written(p)) << "page " << p;
  EXPECT_EQ(bytes[bad * page + 11], written(bad));

  store->fail_writes_covering(FaultyFileStore::kNone);
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(file.contents()[bad * page + 11], written(bad));
}

// A real ENOSPC: a sparse file on a tmpfs with room for an eighth of it, written under eviction
// pressure. Once the buffer holds only pages that cannot be written, a fault fails with SIGBUS after a
// bounded wait; after the tmpfs grows every write reaches the file.
TEST_F(OnAFullTmpfs, ABufferFullOfPagesThatCannotBeWrittenFailsFaultsThenRecovers) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::uint64_t pages = kPages;
  Pager pager(small_config(page, 8));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(path), pages * page));
  std::uint64_t failed_at = pages;
  for (std::uint64_t p = 0; p < pages && failed_at == pages; ++p) {
    Access access = touch_catching_sigbus(bytes + p * page + 11, written(p));
    if (access.sigbus) failed_at = p;
  }
  ASSERT_LT(failed_at, pages) << "a fault must fail rather than wait for a buffer that cannot drain";
  EXPECT_GT(pager.stats().write_errors, 0u);
  errno = 0;
  EXPECT_EQ(pager.flush(), -1);
  EXPECT_EQ(errno, ENOSPC);

  ASSERT_TRUE(fs.grow_to(4 * pages * page));
  // The page whose fault failed raises SIGBUS until it leaves the buffer, which the later ones make it.
  for (std::uint64_t p = failed_at + 1; p < pages; ++p) bytes[p * page + 11] = written(p);
  bytes[failed_at * page + 11] = written(failed_at);
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(wrong_bytes(path, pages), 0u);
}

TEST_F(OnAFullTmpfs, ANormalExitWithUnwrittenPagesFailsWithOneMessage) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::uint64_t pages = kPages;
  std::string errors;
  int status = testing::run_in_child(
      [&] {
        auto* pager = new Pager(small_config(page, 2 * pages));  // never destroyed, never unmapped
        auto* bytes = static_cast<std::uint8_t*>(pager->map(make_file_store(path), pages * page));
        for (std::uint64_t p = 0; p < pages; ++p) bytes[p * page + 11] = written(p);
        return 0;
      },
      &errors);
  ASSERT_TRUE(WIFEXITED(status)) << errors;
  EXPECT_EQ(WEXITSTATUS(status), 74) << errors;
  EXPECT_EQ(testing::count_lines(errors, "could not be written back at exit"), 1u) << errors;
  EXPECT_LE(testing::count_lines(errors), 2u) << errors;
}

TEST_F(OnAFullTmpfs, TheCApiReturnsTheErrorAndKeepsTheRegion) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::uint64_t pages = kPages;
  std::string errors;
  int status = testing::run_in_child(
      [&] {
        setenv("UMAP_BUFSIZE", "128", 1);
        int fd = open(path.c_str(), O_RDWR);
        auto* bytes = static_cast<std::uint8_t*>(umap(nullptr, pages * page, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0));
        if (bytes == UMAP_FAILED) return 2;
        for (std::uint64_t p = 0; p < pages; ++p) bytes[p * page + 11] = written(p);
        errno = 0;
        if (umap_flush() != -1 || errno != ENOSPC) return 3;
        errno = 0;
        if (uunmap(bytes, pages * page) != -1 || errno != ENOSPC) return 4;
        for (std::uint64_t p = 0; p < pages; ++p)
          if (bytes[p * page + 11] != written(p)) return 5;
        if (!fs.grow_to(4 * pages * page)) return 6;
        return uunmap(bytes, pages * page) == 0 ? 0 : 7;
      },
      &errors);
  ASSERT_TRUE(WIFEXITED(status)) << errors;
  ASSERT_EQ(WEXITSTATUS(status), 0) << errors;
  EXPECT_EQ(wrong_bytes(path, pages), 0u);
}

// Without write-protect every resident page of a writable region counts as dirty; a write landing
// between a page's write-back and its eviction must still reach the file.
TEST(NoWriteProtect, WritesRacingWithEvictionsAreNotLost) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScopedEnv no_write_protect("AUTOPAGER_DISABLE_UFFD_FEATURES", "write_protect");
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 128;
  const std::uint64_t words = pages * page / 8;
  ScratchFile file(pages * page, 4);
  Config config = small_config(page, 16);
  config.evict_high_water = 50;
  config.evict_low_water = 10;
  Pager pager(config);
  ASSERT_FALSE(pager.has_write_protect());
  auto* data = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), pages * page));
  constexpr unsigned kWriters = 3;
  // Writer t owns the words i with i % kWriters == t, and writes each a rising count.
  std::vector<std::vector<std::uint64_t>> last(kWriters, std::vector<std::uint64_t>(words, 0));
  std::vector<std::thread> writers;
  for (unsigned t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      for (std::uint64_t n = 1; n <= 60000; ++n) {
        std::uint64_t i = rng() % words;
        i -= i % kWriters;
        i += t;
        if (i >= words) continue;
        last[t][i] = n;
        __atomic_store_n(&data[i], n, __ATOMIC_RELAXED);
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_GT(pager.stats().evictions, 1000u);
  ASSERT_TRUE(pager.unmap(data));
  std::vector<std::uint8_t> after = file.contents();
  std::uint64_t lost = 0;
  for (std::uint64_t i = 0; i < words; ++i) {
    std::uint64_t expected = last[i % kWriters][i];
    if (expected == 0) {
      for (int b = 7; b >= 0; --b) expected = (expected << 8) | pattern_byte(8 * i + b, 4);
    }
    std::uint64_t got;
    std::memcpy(&got, after.data() + 8 * i, 8);
    lost += got != expected;
  }
  EXPECT_EQ(lost, 0u) << "words whose last write did not reach the file";
}

// A file whose first page cannot be written while `failing`: each attempt takes a while, as a slow disk's
// would, and then fails with EIO. Other pages are written as usual.
class SlowlyFailingFirstPage final : public Store {
 public:
  explicit SlowlyFailingFirstPage(const std::string& path) : fd_(open(path.c_str(), O_RDWR | O_CLOEXEC)) {
    if (fd_ < 0) std::abort();
  }
  ~SlowlyFailingFirstPage() override { close(fd_); }
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    return pread(fd_, dst, n, static_cast<off_t>(offset));
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    if (offset < system_page_size() && failing.load()) {
      writing_first_page.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      errno = EIO;
      return -1;
    }
    return pwrite(fd_, src, n, static_cast<off_t>(offset));
  }
  std::uint64_t size() const override { return static_cast<std::uint64_t>(lseek(fd_, 0, SEEK_END)); }

  std::atomic<bool> failing{true};
  std::atomic<bool> writing_first_page{false};

 private:
  int fd_;
};

// Without write-protect an evictor writes a page back while the page is in transit (moved out of the
// region). A flush that comes meanwhile must wait for that write, and when it fails, report it: the page
// is still dirty.
TEST(NoWriteProtect, AFlushDuringAFailingEvictionReportsTheFailure) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScopedEnv no_write_protect("AUTOPAGER_DISABLE_UFFD_FEATURES", "write_protect");
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 32;
  ScratchFile file(pages * page, 6);
  auto store = std::make_shared<SlowlyFailingFirstPage>(file.path());
  Pager pager(small_config(page, 8));
  ASSERT_FALSE(pager.has_write_protect());
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, pages * page));
  bytes[11] = 0x42;  // the first page filled: the first evicted
  for (std::uint64_t p = 1; p < pages && !store->writing_first_page.load(); ++p)
    ASSERT_EQ(bytes[p * page + 7], pattern_byte(p * page + 7, 6));
  for (int waited = 0; waited < 500 && !store->writing_first_page.load(); ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(store->writing_first_page.load()) << "no eviction wrote the first page";
  errno = 0;
  EXPECT_EQ(pager.flush(), -1);
  EXPECT_EQ(errno, EIO);
  store->failing.store(false);
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(file.contents()[11], 0x42);
}

TEST(UmapArguments, AreCheckedUpFront) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(4 * page);
  std::string errors;
  int status = testing::run_in_child(
      [&] {
        int rw = open(file.path().c_str(), O_RDWR);
        int ro = open(file.path().c_str(), O_RDONLY);
        int wo = open(file.path().c_str(), O_WRONLY);
        const off_t huge = std::numeric_limits<off_t>::max() - static_cast<off_t>(page);
        errno = 0;
        if (umap(nullptr, 4 * page, PROT_READ, UMAP_PRIVATE, rw, huge) != UMAP_FAILED || errno != EINVAL) return 1;
        errno = 0;
        if (umap(nullptr, 4 * page, PROT_READ | PROT_WRITE, UMAP_PRIVATE, ro, 0) != UMAP_FAILED || errno != EACCES)
          return 2;
        errno = 0;
        if (umap(nullptr, 4 * page, PROT_READ, UMAP_PRIVATE, wo, 0) != UMAP_FAILED || errno != EACCES) return 3;
        void* fine = umap(nullptr, 4 * page, PROT_READ, UMAP_PRIVATE, ro, 0);
        if (fine == UMAP_FAILED) return 4;
        return uunmap(fine, 4 * page) == 0 ? 0 : 5;
      },
      &errors);
  ASSERT_TRUE(WIFEXITED(status)) << errors;
  EXPECT_EQ(WEXITSTATUS(status), 0) << errors;
}

}  // namespace
}  // namespace autopager
