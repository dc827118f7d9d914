// What the pager costs in memory: its default buffer within the memory cgroup, and at most buffer_size
// (README.md) at every page size.
#include <fstream>
#include <iterator>
#include <string>

#include "page_memory.hpp"
#include "test_util.hpp"

namespace autopager {
namespace {

using testing::in_forked_child;
using testing::pattern_byte;
using testing::ScratchFile;
using testing::small_config;
using testing::TestCgroup;
using testing::thread_sanitizer;

constexpr unsigned kChildSeconds = 240;

// ThreadSanitizer's shadow memory (several bytes for each byte the program touches) is resident memory
// too: what these tests measure is the pager's alone.
#define SKIP_UNDER_THREAD_SANITIZER()                                                                \
  do {                                                                                               \
    if (thread_sanitizer()) GTEST_SKIP() << "ThreadSanitizer's shadow memory counts as the process's"; \
  } while (0)

std::uint64_t status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string name;
  std::uint64_t kib = 0;
  while (status >> name) {
    if (name == key && status >> kib) return kib * 1024;
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

// Starts counting the peak resident memory from now.
void reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// Reads a `file_size` file through a pager of `config`; returns the peak memory it added, or 0
// when a byte was wrong.
std::uint64_t peak_of_reading(const ScratchFile& file, std::uint64_t file_size, const Config& config) {
  Pager pager(config);
  reset_peak();
  const std::uint64_t before = status_bytes("VmRSS:");
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path(), {false}), file_size, PROT_READ));
  for (std::uint64_t i = 0; i < file_size; i += 4093)
    if (bytes[i] != pattern_byte(i, 21)) return 0;
  const std::uint64_t peak = status_bytes("VmHWM:") - before;
  pager.unmap(const_cast<std::uint8_t*>(bytes));
  return peak;
}

// A page far larger than its region (1 GiB over 1 MiB) costs the region's length, not the page.
TEST(MemoryBound, ARegionSmallerThanAPageCostsItsOwnLength) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  SKIP_UNDER_THREAD_SANITIZER();
  const std::uint64_t file_size = 1u << 20;
  ScratchFile file(file_size, 21);
  int code = in_forked_child(kChildSeconds, [&] {
    std::uint64_t peak = peak_of_reading(file, file_size, small_config(1u << 30, 2, 2));
    std::printf("peak added: %llu bytes\n", static_cast<unsigned long long>(peak));
    if (peak == 0) return 2;
    return peak < (32u << 20) ? 0 : 3;
  });
  EXPECT_EQ(code, 0);
}

// Large pages and several fillers, reading a file larger than the buffer in a memory cgroup of the
// buffer and a small allowance (code, stacks, the fault-event arrays): the fillers' read slots come out
// of the buffer, so the process stays within it and is not killed.
TEST(MemoryBound, LargePagesStayWithinTheBuffer) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  SKIP_UNDER_THREAD_SANITIZER();
  TestCgroup cgroup("memory");
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.why();
  const std::size_t page = 16u << 20;
  const std::uint64_t allowance = 8u << 20;  // half a page: no page may be held beyond the buffer
  const std::uint64_t file_size = 16 * page;
  ScratchFile file(file_size, 21);
  Config config = small_config(page, 12, 4);
  config.read_ahead = 2;
  if (!cgroup.set("memory.limit_in_bytes", std::to_string(config.buffer_bytes() + allowance)))
    GTEST_SKIP() << "cannot set a memory limit";
  int code = in_forked_child(kChildSeconds, [&] {
    if (!cgroup.enter()) return 2;
    std::uint64_t peak = peak_of_reading(file, file_size, config);
    std::printf("peak added: %llu bytes, buffer %llu + %llu\n", static_cast<unsigned long long>(peak),
                static_cast<unsigned long long>(config.buffer_bytes()), static_cast<unsigned long long>(allowance));
    if (peak == 0) return 3;
    return peak <= config.buffer_bytes() + allowance ? 0 : 4;
  });
  EXPECT_EQ(code, 0) << "137: SIGKILL, the out-of-memory killer";
}

// 64 MiB of 64 KiB pages, 4 fillers and one evictor: slots of 18 MiB in all.
Config file_of_the_buffers_size_config() {
  Config config = small_config(64u << 10, 1024, 4);
  config.evictors = 1;
  return config;
}

// A file of the buffer's size, which fits only once the slots give their memory back after each use: read twice, or
// written whole and then written back (`writable`), in a memory cgroup of the buffer and a small allowance. Returns
// the forked child's code: 0 when nothing was evicted, every page was read once and the process stayed within the
// limit; 137 when it was killed for memory. -1: the test is skipped (`why`).
int held_whole_within_the_buffer(bool writable, const ScratchFile& file, std::string& why) {
  TestCgroup cgroup("memory");
  if (!cgroup.ok()) return why = cgroup.why(), -1;
  // The process's own memory (some 3 MiB) and, for the moment a filler copies a slot into its pages, both copies:
  // at most a run (1 MiB) for each of 4 fillers. Below the slots' share (18 MiB), which is what is measured.
  const std::uint64_t allowance = 12u << 20;
  const Config config = file_of_the_buffers_size_config();
  const std::uint64_t file_size = config.buffer_bytes();
  if (!cgroup.set("memory.limit_in_bytes", std::to_string(file_size + allowance)))
    return why = "cannot set a memory limit", -1;
  return in_forked_child(kChildSeconds, [&] {
    if (!cgroup.enter()) return 2;
    Pager pager(config);
    reset_peak();
    const std::uint64_t before = status_bytes("VmRSS:");
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path(), {writable}), file_size,
                                                       writable ? PROT_READ | PROT_WRITE : PROT_READ));
    for (int pass = 0; pass < (writable ? 1 : 2); ++pass)
      for (std::uint64_t i = 0; i < file_size; i += writable ? 512 : 4093) {
        if (writable) bytes[i] = pattern_byte(i, 22);
        else if (bytes[i] != pattern_byte(i, 21)) return 3;
      }
    const Stats s = pager.stats();
    if (!pager.unmap(bytes)) return 3;
    const std::uint64_t peak = status_bytes("VmHWM:") - before;
    std::printf("peak added: %llu bytes, buffer %llu + %llu; %s\n", static_cast<unsigned long long>(peak),
                static_cast<unsigned long long>(file_size), static_cast<unsigned long long>(allowance),
                s.to_json().c_str());
    if (s.evictions != 0 || s.bytes_read != file_size) return 4;
    return peak <= file_size + allowance ? 0 : 5;
  });
}

TEST(MemoryBound, AFileOfTheBuffersSizeIsHeldWholeWithinTheBuffer) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  SKIP_UNDER_THREAD_SANITIZER();
  const PageMemory plan = plan_page_memory(file_of_the_buffers_size_config());
  ASSERT_EQ(plan.buffer_units * plan.unit, file_of_the_buffers_size_config().buffer_bytes());
  ASSERT_GT(plan.buffer_units - plan.resident_units, (12u << 20) / plan.unit) << "the slots' share is what is measured";
  ScratchFile file(plan.buffer_units * plan.unit, 21);
  std::string why;
  const int code = held_whole_within_the_buffer(false, file, why);
  if (code < 0) GTEST_SKIP() << why;
  EXPECT_EQ(code, 0) << "137: SIGKILL, the out-of-memory killer";
}

// The write-backs, which do not copy into the evictors' slots while the pages take the slots' share, within it too;
// and every byte written reaches the file.
TEST(MemoryBound, AWritableFileOfTheBuffersSizeIsWrittenBackWithinTheBuffer) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  SKIP_UNDER_THREAD_SANITIZER();
  ASSERT_GT(plan_page_memory(file_of_the_buffers_size_config()).write_staging_slots, 0u);
  const std::uint64_t file_size = file_of_the_buffers_size_config().buffer_bytes();
  ScratchFile file(file_size, 21);
  std::string why;
  const int code = held_whole_within_the_buffer(true, file, why);
  if (code < 0) GTEST_SKIP() << why;
  EXPECT_EQ(code, 0) << "137: SIGKILL, the out-of-memory killer";
  std::ifstream written(file.path(), std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  ASSERT_EQ(content.size(), file_size);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < file_size; ++i)
    wrong += static_cast<std::uint8_t>(content[i]) != (i % 512 == 0 ? pattern_byte(i, 22) : pattern_byte(i, 21));
  EXPECT_EQ(wrong, 0u);
}

// A buffer of fewer pages than four a filler starts fewer fillers: each needs a read slot, and the slots
// take at most a quarter of the buffer.
TEST(MemoryBound, ASmallBufferStartsFewerFillers) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  Pager pager(small_config(page, 11, 4));
  EXPECT_EQ(pager.config().fillers, 2u);
  EXPECT_EQ(pager.config().buffer_pages, 11u);
  Pager roomy(small_config(page, 16, 4));
  EXPECT_EQ(roomy.config().fillers, 4u);
  const std::uint64_t size = 64 * page;
  ScratchFile file(size, 21);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path(), {false}), size, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < size; i += 509) wrong += bytes[i] != pattern_byte(i, 21);
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

// numpy.memmap reads a file larger than its container's memory limit; so does the default pager, whose
// buffer fits in the limit less what the process already uses.
TEST(MemoryCgroup, TheDefaultBufferFitsTheLimitAndAReadLargerThanItFinishes) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  SKIP_UNDER_THREAD_SANITIZER();
  TestCgroup cgroup("memory");
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.why();
  const std::uint64_t limit = 160u << 20;
  const std::uint64_t file_size = 192u << 20;
  ScratchFile file(file_size, 21);
  if (!cgroup.set("memory.limit_in_bytes", std::to_string(limit))) GTEST_SKIP() << "cannot set a memory limit";
  int code = in_forked_child(kChildSeconds, [&] {
    if (!cgroup.enter()) return 2;
    Config config = Config::defaults();
    std::printf("default buffer in a %llu-byte cgroup: %llu bytes\n", static_cast<unsigned long long>(limit),
                static_cast<unsigned long long>(config.buffer_bytes()));
    if (config.buffer_bytes() > limit / 10 * 8) return 3;
    Pager pager(config);
    auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path(), {false}), file_size, PROT_READ));
    for (std::uint64_t i = 0; i < file_size; i += 1021)
      if (bytes[i] != pattern_byte(i, 21)) return 4;
    return pager.stats().evictions > 0 ? 0 : 5;
  });
  EXPECT_EQ(code, 0) << "137: SIGKILL, the out-of-memory killer";
}

}  // namespace
}  // namespace autopager
