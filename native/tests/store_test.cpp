#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;

// With O_DIRECT (the parameter) too: segment a starts at an unaligned offset, so its pages go through
// the page cache while the others are read directly.
class MultiFileStoreTest : public ::testing::TestWithParam<bool> {};

TEST_P(MultiFileStoreTest, FilesWithOffsetsAndLengthsFormOneRegion) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile a(10 * page, 1), b(7 * page + 333, 2), c(5 * page, 3);
  // a from byte 100, 3 pages; all of b; c from page 1, 2 pages.
  std::vector<FileSegment> segments = {{a.path(), 100, 3 * page}, {b.path(), 0, 0}, {c.path(), page, 2 * page}};
  const std::uint64_t total = 3 * page + 7 * page + 333 + 2 * page;
  Pager pager(testing::small_config(page, 4));
  auto store = make_multi_file_store(segments, true, GetParam());
  ASSERT_EQ(store->size(), total);
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, total));
  auto expected = [&](std::uint64_t i) {
    if (i < 3 * page) return pattern_byte(100 + i, 1);
    i -= 3 * page;
    if (i < 7 * page + 333) return pattern_byte(i, 2);
    i -= 7 * page + 333;
    return pattern_byte(page + i, 3);
  };
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < total; ++i) wrong += bytes[i] != expected(i);
  EXPECT_EQ(wrong, 0u);
  // Writes across the seams land in the right file at the right offset.
  bytes[3 * page - 1] = 0x11;
  bytes[3 * page] = 0x22;
  bytes[total - 1] = 0x33;
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_EQ(a.contents()[100 + 3 * page - 1], 0x11);
  EXPECT_EQ(b.contents()[0], 0x22);
  EXPECT_EQ(c.contents()[3 * page - 1], 0x33);
  EXPECT_EQ(c.contents()[3 * page], pattern_byte(3 * page, 3)) << "past the segment is untouched";
}

INSTANTIATE_TEST_SUITE_P(Direct, MultiFileStoreTest, ::testing::Bool());

TEST(MemoryStore, ServesAndKeepsWritesThroughEvictions) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t size = 512 * page;
  auto store = make_memory_store(size);
  Pager pager(testing::small_config(page, 8));
  auto* words = static_cast<std::uint64_t*>(pager.map(store, size));
  for (std::uint64_t i = 0; i < size / 8; i += 7) words[i] = i ^ 0x5555;
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < size / 8; ++i) wrong += words[i] != (i % 7 == 0 ? i ^ 0x5555 : 0);
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(pager.stats().evictions, 500u);
  pager.unmap(words);
  std::vector<std::uint64_t> back(size / 8);
  ASSERT_EQ(store->read(back.data(), size, 0), static_cast<ssize_t>(size));
  wrong = 0;
  for (std::uint64_t i = 0; i < size / 8; ++i) wrong += back[i] != (i % 7 == 0 ? i ^ 0x5555 : 0);
  EXPECT_EQ(wrong, 0u);
}

// Reads the file's bytes through the store (in pages of `page`, a buffer of 4 of them: some are evicted),
// writes some, the last byte among them, and checks that they reach the file and that its length stays.
void expect_round_trip(const std::shared_ptr<Store>& store, const ScratchFile& file, std::uint64_t size,
                       std::size_t page = system_page_size()) {
  Pager pager(testing::small_config(page, 4));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, size));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < size; ++i) wrong += bytes[i] != pattern_byte(i, 4);
  EXPECT_EQ(wrong, 0u);
  for (std::uint64_t i = 0; i < size; i += 1000) bytes[i] = 0xEE;
  bytes[size - 1] = 0xDD;
  ASSERT_TRUE(pager.unmap(bytes));
  EXPECT_GT(pager.stats().evictions, 0u);
  std::vector<std::uint8_t> after = file.contents();
  ASSERT_EQ(after.size(), size);
  wrong = 0;
  for (std::uint64_t i = 0; i + 1 < size; ++i) wrong += after[i] != (i % 1000 == 0 ? 0xEE : pattern_byte(i, 4));
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(after[size - 1], 0xDD);
}

// 64 pages and an unaligned tail, which goes through the page cache.
const std::uint64_t kDirectFileSize = 64 * system_page_size() + 500;

TEST(FileStore, DirectIoReadsAndWritesTheSameBytes) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kDirectFileSize, 4);
  if (std::string why = direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
  EXPECT_FALSE(make_file_store(file.path())->direct_io());
  FileStoreOptions options;
  options.direct = true;
  auto store = make_file_store(file.path(), options);
  EXPECT_TRUE(store->direct_io());
  expect_round_trip(store, file, kDirectFileSize);
}

// Pages of 16 system pages over files whose last page is partial: 500 bytes (not a multiple of the system
// page: written back through the page cache) or 2 system pages (aligned: with O_DIRECT, shorter than a page).
TEST(FileStore, DirectIoWritesAPartialLastPageBackAndKeepsTheFilesLength) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 16 * system_page_size();
  for (std::uint64_t size : {6 * page + 500, 6 * page + 2 * system_page_size()}) {
    SCOPED_TRACE("a file of " + std::to_string(size) + " bytes");
    ScratchFile file(size, 4);
    if (std::string why = direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
    FileStoreOptions options;
    options.direct = true;
    auto store = make_file_store(file.path(), options);
    ASSERT_TRUE(store->direct_io());
    expect_round_trip(store, file, size, page);
  }
}

// Which of the file's first `pages` system pages are in the page cache.
std::vector<bool> cached_pages(const ScratchFile& file, std::size_t pages) {
  const std::size_t page = system_page_size();
  std::vector<bool> cached(pages, false);
  const int fd = open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
  void* map = mmap(nullptr, pages * page, PROT_READ, MAP_SHARED, fd, 0);
  std::vector<unsigned char> resident(pages);
  if (map != MAP_FAILED && mincore(map, pages * page, resident.data()) == 0)
    for (std::size_t i = 0; i < pages; ++i) cached[i] = (resident[i] & 1) != 0;
  if (map != MAP_FAILED) munmap(map, pages * page);
  close(fd);
  return cached;
}

void drop_cached_pages(const ScratchFile& file) {
  const int fd = open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

// A window that ends inside a page: a read or write of its last run moves the run's whole pages with O_DIRECT
// and only the partial tail through the page cache.
TEST(FileStore, ARunEndingInAPartialPageGoesDirectExceptItsTail) {
  const std::size_t page = system_page_size();
  const std::uint64_t window = 3 * page + 100;
  ScratchFile file(8 * page, 4);
  if (std::string why = direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
  FileStoreOptions options;
  options.direct = true;
  options.writable = true;
  options.length = window;
  auto store = make_file_store(file.path(), options);
  ASSERT_TRUE(store->direct_io());
  void* memory = nullptr;
  ASSERT_EQ(posix_memalign(&memory, page, 4 * page), 0);
  auto* bytes = static_cast<std::uint8_t*>(memory);
  const std::vector<bool> only_the_tail = {false, false, false, true};

  drop_cached_pages(file);
  // tmpfs (O_DIRECT since Linux 6.6) keeps its files in the page cache: nothing there tells the paths apart.
  if (cached_pages(file, 4) != std::vector<bool>(4, false)) {
    std::free(memory);
    GTEST_SKIP() << "this file system keeps the file's pages cached (tmpfs): the page cache cannot show the path";
  }
  ASSERT_EQ(store->read(bytes, 4 * page, 0), static_cast<ssize_t>(window));
  EXPECT_EQ(cached_pages(file, 4), only_the_tail);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < window; ++i) wrong += bytes[i] != pattern_byte(i, 4);
  EXPECT_EQ(wrong, 0u);

  std::memset(bytes, 0xAB, window);
  drop_cached_pages(file);
  ASSERT_EQ(store->write(bytes, window, 0), static_cast<ssize_t>(window));
  EXPECT_EQ(cached_pages(file, 4), only_the_tail);
  const std::vector<std::uint8_t> after = file.contents();
  wrong = 0;
  for (std::uint64_t i = 0; i < 8 * page; ++i) wrong += after[i] != (i < window ? 0xAB : pattern_byte(i, 4));
  EXPECT_EQ(wrong, 0u);
  std::free(memory);
}

TEST(FileStore, ADescriptorOpenedWithDirectIoKeepsAnUnalignedTail) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kDirectFileSize, 4);
  if (std::string why = direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
  int fd = open(file.path().c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto store = make_fd_store(fd, {}, true);
  EXPECT_TRUE(store->direct_io());
  expect_round_trip(store, file, kDirectFileSize);
}

// direct_io on a descriptor the program opened without O_DIRECT: the store reads and writes through a
// descriptor of its own, and the program's descriptor keeps its flags.
TEST(FileStore, DirectIoOnAProgramsDescriptorLeavesItsFlags) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kDirectFileSize, 4);
  if (std::string why = direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
  int fd = open(file.path().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  FileStoreOptions options;
  options.direct = true;
  auto store = make_fd_store(fd, options, false);
  EXPECT_TRUE(store->direct_io());
  expect_round_trip(store, file, kDirectFileSize);
  store.reset();
  EXPECT_EQ(fcntl(fd, F_GETFL) & O_DIRECT, 0);
  EXPECT_EQ(close(fd), 0) << "the program's descriptor is still its own";
}

TEST(FileStore, AMissingFileIsAnErrorNamingIt) {
  try {
    make_file_store("/nonexistent/autopager/file");
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/autopager/file"), std::string::npos);
    EXPECT_EQ(e.code().value(), ENOENT);
  }
}

}  // namespace
}  // namespace autopager
