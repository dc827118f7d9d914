// Regions in 2 MiB huge pages (huge_pages): the data of a file round trips at 2 and 4 MiB pages, pages are
// evicted and faulted again in a file larger than the buffer (the pool's pages all come back), threads read and
// write under eviction pressure, a read that cannot be served is SIGBUS, a failed write-back is reported and its
// page kept, a forked child has no mapping, and what cannot be had is refused (on) or falls back (auto). Each test
// reserves the huge pages it needs (/proc/sys/vm/nr_hugepages, as root) and puts the pool back afterwards.
#include <sys/mman.h>

#include <atomic>
#include <random>
#include <thread>

#include "fault_injection.hpp"
#include "huge_pages.hpp"
#include "umap/umap.h"

namespace autopager {
namespace {

using testing::Access;
using testing::FaultyFileStore;
using testing::in_forked_child;
using testing::pattern_byte;
using testing::read_catching_sigbus;
using testing::ScopedEnv;
using testing::ScratchFile;
using testing::small_config;

constexpr const char* kPoolSize = "/proc/sys/vm/nr_hugepages";
constexpr std::size_t kMiB = std::size_t{1} << 20;

std::uint64_t read_pool_size() {
  std::ifstream in(kPoolSize);
  std::uint64_t n = 0;
  in >> n;
  return n;
}

bool write_pool_size(std::uint64_t n) {
  std::ofstream out(kPoolSize);
  out << n << "\n";
  out.flush();
  return static_cast<bool>(out);
}

// Grows the pool by what a test needs and shrinks it back when the test ends; why() says what was missing.
class HugePagePool {
 public:
  explicit HugePagePool(std::uint64_t pages) : old_(read_pool_size()) {
    if (available_huge_pages() >= pages) return;
    if (!write_pool_size(old_ + pages)) {
      why_ = std::string("cannot write ") + kPoolSize + " (not root?): " + std::strerror(errno);
      return;
    }
    grown_ = true;
    if (available_huge_pages() < pages)
      why_ = "the kernel gave " + std::to_string(available_huge_pages()) + " free 2 MiB huge pages of the " +
             std::to_string(pages) + " asked (memory too fragmented or too small)";
  }
  ~HugePagePool() {
    if (grown_) write_pool_size(old_);
  }
  const std::string& why() const { return why_; }

 private:
  const std::uint64_t old_;
  bool grown_ = false;
  std::string why_;
};

#define REQUIRE_HUGE_PAGES(pool)                                              \
  do {                                                                        \
    AUTOPAGER_REQUIRE_USERFAULTFD();                                          \
    if (!(pool).why().empty()) GTEST_SKIP() << "no huge pages: " << (pool).why(); \
  } while (0)

// The tests of a pager of 2 MiB pages in huge pages: each starts with kPoolPages huge pages free (the largest buffer
// among them), the pool put back after it, or is skipped, saying why.
class InHugePages : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kPoolPages = 8;
  void SetUp() override { REQUIRE_HUGE_PAGES(pool_); }

 private:
  HugePagePool pool_{kPoolPages};
};

// The page size the kernel maps `address` with (KernelPageSize in /proc/self/smaps), 0 when it is in no mapping.
std::size_t kernel_page_size(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find('-')) {
      inside = at >= begin && at < end;
      continue;
    }
    std::size_t kib = 0;
    if (inside && std::sscanf(line.c_str(), "KernelPageSize: %zu kB", &kib) == 1) return kib * 1024;
  }
  return 0;
}

Config huge_config(std::size_t page, std::uint64_t buffer_pages, HugePages huge = HugePages::kOn) {
  Config c = small_config(page, buffer_pages);
  c.huge_pages = huge;
  return c;
}

// A pager of `buffer` pages of 2 MiB over a file of `pages` of them (the pattern of `seed`), mapped read-write.
struct MappedFile {
  MappedFile(std::uint64_t buffer, std::uint64_t pages, std::uint64_t seed, HugePages huge = HugePages::kOn)
      : file(pages * 2 * kMiB, seed),
        expected(file.contents()),
        pager(huge_config(2 * kMiB, buffer, huge)),
        bytes(static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), pages * 2 * kMiB))) {}
  ScratchFile file;
  std::vector<std::uint8_t> expected;  // the file's bytes, as the test changes them
  Pager pager;
  std::uint8_t* const bytes;
};

std::uint64_t wrong_bytes(const std::vector<std::uint8_t>& actual, const std::vector<std::uint8_t>& expected) {
  if (actual.size() != expected.size()) return std::max(actual.size(), expected.size());
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) wrong += actual[i] != expected[i];
  return wrong;
}

class RoundTrip : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RoundTrip, ReadsAndWritesEveryByteInHugePages) {
  const std::size_t page = GetParam();
  const std::uint64_t buffer = 16;
  HugePagePool pool(buffer * page / kHugePageSize);
  REQUIRE_HUGE_PAGES(pool);
  const std::size_t size = 6 * page + 12345;  // a partial last page
  ScratchFile file(size, 3);
  std::vector<std::uint8_t> expected = file.contents();
  Pager pager(huge_config(page, buffer));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), size));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes) % page, 0u);
  std::vector<std::uint8_t> seen(bytes, bytes + size);
  EXPECT_EQ(wrong_bytes(seen, expected), 0u);
  EXPECT_EQ(kernel_page_size(bytes), kHugePageSize) << "the region is hugetlb memory";
  for (std::size_t i = 7; i < size; i += 4099) bytes[i] = expected[i] = static_cast<std::uint8_t>(i * 31);
  ASSERT_EQ(pager.flush(), 0);
  EXPECT_EQ(wrong_bytes(file.contents(), expected), 0u) << "after flush";
  for (std::size_t i = 11; i < size; i += 8191) bytes[i] = expected[i] = 0xC3;  // written again after the flush
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(wrong_bytes(file.contents(), expected), 0u) << "after unmap";
}

INSTANTIATE_TEST_SUITE_P(PageSizes, RoundTrip, ::testing::Values(2 * kMiB, 4 * kMiB),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return std::to_string(info.param / kMiB) + "MiB";
                         });

// 24 pages through a buffer of 8: every page is evicted and faulted again, written ones are written back, and
// the pool has every huge page back once the region is gone.
TEST_F(InHugePages, AFileLargerThanTheBufferIsEvictedAndFaultedAgain) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 8, pages = 24;
  const std::uint64_t free_before = available_huge_pages();
  {
    MappedFile mapped(buffer, pages, 5);
    std::vector<std::uint8_t>& expected = mapped.expected;
    std::uint8_t* bytes = mapped.bytes;
    for (int round = 0; round < 2; ++round) {
      for (std::uint64_t p = 0; p < pages; ++p) {
        const std::size_t at = p * page + 1000 + static_cast<std::size_t>(round) * 77;
        ASSERT_EQ(bytes[at], expected[at]) << "page " << p << " round " << round;
        if (p % 3 == 0) bytes[at + 1] = expected[at + 1] = static_cast<std::uint8_t>(p + round + 1);
      }
    }
    EXPECT_GT(mapped.pager.stats().evictions, pages) << "the pages went and came back";
    EXPECT_LE(free_before - available_huge_pages(), buffer) << "no more huge pages held than the buffer's";
    ASSERT_TRUE(mapped.pager.unmap(bytes));
    EXPECT_EQ(wrong_bytes(mapped.file.contents(), expected), 0u);
  }
  EXPECT_EQ(available_huge_pages(), free_before) << "every huge page is back in the pool";
}

// Four threads write their own bytes and read others' all over a region four times the buffer.
TEST_F(InHugePages, ThreadsReadAndWriteUnderEvictionPressure) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 6, pages = 24;
  MappedFile mapped(buffer, pages, 6);
  const std::vector<std::uint8_t> original = mapped.expected;
  std::uint8_t* bytes = mapped.bytes;
  constexpr unsigned kThreads = 4;
  constexpr std::size_t kStride = 64 * 1024;  // each thread writes byte (thread) of every 64 KiB
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      for (std::size_t at = t; at < pages * page; at += kStride) {
        bytes[at] = static_cast<std::uint8_t>(0xA0 + t);
        const std::size_t other = random() % (pages * page);
        if (other % kStride >= kThreads && bytes[other] != original[other]) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0u) << "bytes no thread wrote read other than the file's";
  ASSERT_TRUE(mapped.pager.unmap(bytes));
  std::vector<std::uint8_t> expected = original;
  for (std::size_t at = 0; at < expected.size(); ++at)
    if (at % kStride < kThreads) expected[at] = static_cast<std::uint8_t>(0xA0 + at % kStride);
  EXPECT_EQ(wrong_bytes(mapped.file.contents(), expected), 0u);
}

// With the kernel's poison marker and with a signal to the faulting thread.
class HugePageReadErrors : public InHugePages, public ::testing::WithParamInterface<bool> {};

TEST_P(HugePageReadErrors, APageThatCannotBeReadIsSigbusUntilItCanBe) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 4, pages = 8, bad = 3;
  std::unique_ptr<ScopedEnv> no_poison;
  if (!GetParam()) no_poison = std::make_unique<ScopedEnv>("AUTOPAGER_DISABLE_UFFD_FEATURES", "poison");
  ScratchFile file(pages * page, 7);
  auto store = std::make_shared<FaultyFileStore>(file.path(), true);
  store->fail_reads_at(bad * page, FaultyFileStore::kForever);
  Pager pager(huge_config(page, buffer));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, pages * page));
  std::uint8_t* at = bytes + bad * page + 4321;
  Access access = read_catching_sigbus(at);
  ASSERT_TRUE(access.sigbus) << "read " << int(access.value) << " instead of a SIGBUS";
  if (GetParam()) EXPECT_EQ(access.address, at) << "si_addr is the address touched";
  else EXPECT_EQ(access.code, SI_TKILL) << "sent to the faulting thread";
  store->fail_reads_at(bad * page, 0);
  for (std::uint64_t p = 0; p < pages; ++p)  // the poisoned page leaves the buffer in turn
    if (p != bad) ASSERT_EQ(bytes[p * page + 9], pattern_byte(p * page + 9, 7)) << "page " << p;
  Access again = read_catching_sigbus(at);
  ASSERT_FALSE(again.sigbus);
  EXPECT_EQ(again.value, pattern_byte(bad * page + 4321, 7));
  ASSERT_TRUE(pager.unmap(bytes));
}

INSTANTIATE_TEST_SUITE_P(Paths, HugePageReadErrors, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Poison" : "SignalToThread");
                         });

// The pool emptied by another mapping after the pager started: a fault that finds no huge page is SIGBUS, as on
// the kernel's hugetlb mapping, and is served once the pool has pages again.
TEST_F(InHugePages, AFaultWithNoHugePageLeftIsSigbus) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 4, pages = 8;
  MappedFile mapped(buffer, pages, 12);
  std::uint8_t* bytes = mapped.bytes;
  const std::size_t hog_bytes = available_huge_pages() * kHugePageSize;
  void* hog = mmap(nullptr, hog_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
  ASSERT_NE(hog, MAP_FAILED) << "reserving the pool's free pages: " << std::strerror(errno);
  ASSERT_EQ(available_huge_pages(), 0u);
  Access access = read_catching_sigbus(bytes + 77);
  EXPECT_TRUE(access.sigbus) << "read " << int(access.value) << " without a huge page";
  munmap(hog, hog_bytes);
  for (std::uint64_t p = 1; p < pages; ++p)  // the failed page leaves the buffer in turn
    ASSERT_EQ(bytes[p * page + 9], pattern_byte(p * page + 9, 12)) << "page " << p;
  Access again = read_catching_sigbus(bytes + 77);
  ASSERT_FALSE(again.sigbus);
  EXPECT_EQ(again.value, pattern_byte(77, 12));
  ASSERT_TRUE(mapped.pager.unmap(bytes));
}

TEST_F(InHugePages, AFailedWriteBackIsReportedAndItsPagesKept) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 8, pages = 4;
  ScratchFile file(pages * page, 8);
  std::vector<std::uint8_t> expected = file.contents();
  auto store = std::make_shared<FaultyFileStore>(file.path(), true);
  Pager pager(huge_config(page, buffer));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, pages * page));
  for (std::uint64_t p = 0; p < pages; ++p) bytes[p * page + 11] = expected[p * page + 11] = static_cast<std::uint8_t>(0x80 + p);
  store->fail_writes_with(EIO);
  errno = 0;
  EXPECT_EQ(pager.flush(), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(pager.stats().dirty_pages, pages);
  EXPECT_FALSE(pager.unmap(bytes)) << "unmap must not drop pages it could not write";
  ASSERT_EQ(pager.region_base(bytes), bytes) << "the region stays mapped";
  for (std::uint64_t p = 0; p < pages; ++p) ASSERT_EQ(bytes[p * page + 11], expected[p * page + 11]);
  store->fail_writes_with(0);
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(wrong_bytes(file.contents(), expected), 0u);
}

TEST_F(InHugePages, AForkedChildHasNoMappingAndTheParentKeepsItsPages) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 4, pages = 6;
  MappedFile mapped(buffer, pages, 9);
  std::vector<std::uint8_t>& expected = mapped.expected;
  std::uint8_t* bytes = mapped.bytes;
  bytes[5] = expected[5] = 0x42;  // resident and dirty at the fork
  int code = in_forked_child(60, [&] {
    signal(SIGSEGV, SIG_DFL);
    bytes[6] = 0x77;
    return 0;
  });
  EXPECT_EQ(code, 128 + SIGSEGV);
  EXPECT_EQ(bytes[5], 0x42);
  EXPECT_EQ(bytes[6], expected[6]);
  ASSERT_TRUE(mapped.pager.unmap(bytes));
  EXPECT_EQ(wrong_bytes(mapped.file.contents(), expected), 0u);
}

// The C API's default pager takes huge_pages from the environment (UMAP_HUGE_PAGES), in a child of its own: on maps
// its regions in huge pages, and refuses (EINVAL) a page size that is no multiple of them.
TEST_F(InHugePages, TheCApiMapsInHugePagesWhenTheEnvironmentSaysOn) {
  const std::size_t page = 2 * kMiB;
  const std::size_t size = 4 * page;
  ScratchFile file(size, 12);
  std::vector<std::uint8_t> expected = file.contents();
  for (std::size_t i = 5; i < size; i += 4093) expected[i] = static_cast<std::uint8_t>(i * 7);
  const int code = in_forked_child(60, [&] {
    setenv("UMAP_HUGE_PAGES", "on", 1);
    setenv("UMAP_PAGESIZE", std::to_string(page).c_str(), 1);
    setenv("UMAP_BUFSIZE", "4", 1);
    int fd = open(file.path().c_str(), O_RDWR);
    auto* bytes = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0));
    if (bytes == UMAP_FAILED) return 1;
    if (kernel_page_size(bytes) != kHugePageSize) return 2;
    for (std::size_t i = 5; i < size; i += 4093) bytes[i] = static_cast<std::uint8_t>(i * 7);
    return uunmap(bytes, size) == 0 ? 0 : 3;
  });
  EXPECT_EQ(code, 0) << "1: umap failed, 2: not in huge pages, 3: uunmap failed";
  EXPECT_EQ(wrong_bytes(file.contents(), expected), 0u);
  const int refused = in_forked_child(60, [&] {
    setenv("UMAP_HUGE_PAGES", "on", 1);
    setenv("UMAP_PAGESIZE", "65536", 1);
    int fd = open(file.path().c_str(), O_RDWR);
    void* bytes = umap(nullptr, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0);
    return bytes == UMAP_FAILED && errno == EINVAL ? 0 : 1;
  });
  EXPECT_EQ(refused, 0);
}

TEST(HugePagesConfig, OnIsRefusedWhereItCannotBe) {
  Config config = small_config(64 * 1024, 64);
  config.huge_pages = HugePages::kOn;
  EXPECT_THROW(
      {
        try {
          config.validate();
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("huge_pages (UMAP_HUGE_PAGES) = on: page_size"), std::string::npos)
              << e.what();
          throw;
        }
      },
      ConfigError);
  config.page_size = 2 * kMiB;
  config.keep_writes = true;
  EXPECT_THROW(config.validate(), ConfigError) << "keep_writes with huge pages";
  config.huge_pages = HugePages::kAuto;
  EXPECT_NO_THROW(config.validate()) << "auto falls back instead";
}

TEST(HugePagesConfig, TheVariableTakesOffOnAutoAndRefusesOtherText) {
  {
    ScopedEnv env("UMAP_HUGE_PAGES", "Auto");
    EXPECT_EQ(Config::from_environment().huge_pages, HugePages::kAuto);
  }
  {
    ScopedEnv env("UMAP_HUGE_PAGES", "0");
    EXPECT_EQ(Config::from_environment().huge_pages, HugePages::kOff);
  }
  ScopedEnv env("UMAP_HUGE_PAGES", "yes");
  try {
    Config::from_environment();
    ADD_FAILURE() << "UMAP_HUGE_PAGES=yes accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("UMAP_HUGE_PAGES"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Config::defaults().huge_pages, HugePages::kOff) << "off unless asked";
}

// A pool smaller than the buffer: on refuses to start, naming the setting; auto maps the system's pages.
TEST(HugePagesConfig, APoolTooSmallIsRefusedOnAndFallsBackUnderAuto) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = available_huge_pages() + 16;
  try {
    Pager pager(huge_config(page, buffer));
    ADD_FAILURE() << "a pager started with too few huge pages";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("huge_pages (UMAP_HUGE_PAGES) = on: the pool has"), std::string::npos)
        << e.what();
  }
  MappedFile mapped(buffer, 3, 10, HugePages::kAuto);
  EXPECT_EQ(mapped.bytes[page + 3], pattern_byte(page + 3, 10));
  EXPECT_EQ(kernel_page_size(mapped.bytes), system_page_size());
  ASSERT_TRUE(mapped.pager.unmap(mapped.bytes));
}

TEST(HugePagesConfig, AutoUsesHugePagesWhereItCan) {
  const std::size_t page = 2 * kMiB;
  const std::uint64_t buffer = 4;
  HugePagePool pool(buffer);
  REQUIRE_HUGE_PAGES(pool);
  ScratchFile file(2 * page, 11);
  Pager pager(huge_config(page, buffer, HugePages::kAuto));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), 2 * page));
  EXPECT_EQ(bytes[page + 3], pattern_byte(page + 3, 11));
  EXPECT_EQ(kernel_page_size(bytes), kHugePageSize);
  ASSERT_TRUE(pager.unmap(bytes));
  // A page size that is no multiple of 2 MiB: auto is off.
  Pager small(huge_config(64 * 1024, 64, HugePages::kAuto));
  bytes = static_cast<std::uint8_t*>(small.map(make_file_store(file.path()), 2 * page));
  EXPECT_EQ(bytes[page + 3], pattern_byte(page + 3, 11));
  EXPECT_EQ(kernel_page_size(bytes), system_page_size());
  ASSERT_TRUE(small.unmap(bytes));
}

}  // namespace
}  // namespace autopager
