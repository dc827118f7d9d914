#include <sys/mman.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "test_util.hpp"
#include "umap/umap.h"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;

// Runs `body` in a child process with the given UMAP_* settings, so each gets a fresh default pager.
template <typename Body>
int in_child(const std::vector<std::pair<const char*, const char*>>& env, Body body) {
  pid_t child = fork();
  if (child == 0) {
    for (const auto& [name, value] : env) setenv(name, value, 1);
    std::exit(body());
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CApi, RefusedConfigurationFailsTheMappingWithEinval) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(4 * system_page_size());
  const std::vector<std::pair<const char*, const char*>> bad[] = {
      {{"UMAP_PAGESIZE", "5000"}},
      {{"UMAP_PAGE_FILLERS", "lots"}},
      {{"UMAP_LOG_LEVEL", "LOUD"}},
      {{"UMAP_EVICT_HIGH_WATER_THRESHOLD", "50"}, {"UMAP_EVICT_LOW_WATER_THRESHOLD", "50"}},
  };
  for (const auto& env : bad) {
    int code = in_child(env, [&] {
      int fd = open(file.path().c_str(), O_RDWR);
      void* p = umap(nullptr, 4 * system_page_size(), PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0);
      return (p == UMAP_FAILED && errno == EINVAL) ? 0 : 1;
    });
    EXPECT_EQ(code, 0) << env[0].first << "=" << env[0].second;
  }
}

TEST(CApi, ConfigurationGettersReportTheEnvironment) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  int code = in_child({{"UMAP_PAGESIZE", "16384"}, {"UMAP_PAGE_FILLERS", "3"}, {"UMAP_PAGE_EVICTORS", "2"},
                       {"UMAP_BUFSIZE", "77"}, {"UMAP_READ_AHEAD", "5"}, {"UMAP_MAX_FAULT_EVENTS", "9"},
                       {"UMAP_EVICT_HIGH_WATER_THRESHOLD", "85"}, {"UMAP_EVICT_LOW_WATER_THRESHOLD", "40"}},
                      [] {
                        bool ok = umapcfg_get_umap_page_size() == 16384 && umapcfg_get_num_fillers() == 3 &&
                                  umapcfg_get_num_evictors() == 2 && umapcfg_get_max_pages_in_buffer() == 77 &&
                                  umapcfg_get_read_ahead() == 5 && umapcfg_get_max_fault_events() == 9 &&
                                  umapcfg_get_evict_high_water_threshold() == 85 &&
                                  umapcfg_get_evict_low_water_threshold() == 40 &&
                                  umapcfg_get_system_page_size() == static_cast<long>(system_page_size()) &&
                                  umap_has_write_support() == 1;
                        return ok ? 0 : 1;
                      });
  EXPECT_EQ(code, 0);
}

TEST(CApi, MapFlushPrefetchUnmap) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t size = 256 * page;
  ScratchFile file(size, 6);
  int code = in_child({{"UMAP_BUFSIZE", "16"}}, [&] {
    int fd = open(file.path().c_str(), O_RDWR);
    auto* bytes = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0));
    if (bytes == UMAP_FAILED) return 2;
    close(fd);  // the region keeps its own descriptor
    umap_prefetch_item items[2] = {{bytes + 5 * page}, {bytes + 200 * page}};
    umap_prefetch(2, items);
    for (std::size_t i = 0; i < size; i += 513)
      if (bytes[i] != pattern_byte(i, 6)) return 3;
    bytes[7] = 0x42;
    if (umap_flush() != 0) return 4;
    if (uunmap(bytes + 1, size) == 0) return 5;  // not the start of a region
    bytes[size - 1] = 0x43;
    if (uunmap(bytes, size) != 0) return 6;
    return 0;
  });
  ASSERT_EQ(code, 0);
  std::vector<std::uint8_t> after = file.contents();
  EXPECT_EQ(after[7], 0x42);
  EXPECT_EQ(after[size - 1], 0x43);
  EXPECT_EQ(after[8], pattern_byte(8, 6));
}

TEST(CApi, BadFlagsAndDescriptorsAreRefused) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  int code = in_child({}, [] {
    if (umap(nullptr, 4096, PROT_READ, MAP_SHARED, 0, 0) != UMAP_FAILED || errno != EINVAL) return 1;
    if (umap(nullptr, 4096, PROT_READ, UMAP_PRIVATE, -1, 0) != UMAP_FAILED || errno != EBADF) return 2;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

// UMap reads UMAP_*=0 as "not set".
TEST(CApi, ZeroSettingsMeanTheDefaults) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(8 * system_page_size(), 3);
  int code = in_child({{"UMAP_PAGESIZE", "0"}, {"UMAP_BUFSIZE", "0"}, {"UMAP_PAGE_FILLERS", "0"},
                       {"UMAP_PAGE_EVICTORS", "0"}, {"UMAP_MAX_FAULT_EVENTS", "0"},
                       {"UMAP_EVICT_HIGH_WATER_THRESHOLD", "0"}, {"UMAP_EVICT_LOW_WATER_THRESHOLD", "0"}},
                      [&] {
                        int fd = open(file.path().c_str(), O_RDONLY);
                        auto* p = static_cast<std::uint8_t*>(
                            umap(nullptr, 8 * system_page_size(), PROT_READ, UMAP_PRIVATE, fd, 0));
                        if (p == UMAP_FAILED || p[5] != pattern_byte(5, 3)) return 2;
                        Config d = Config::defaults();
                        // The page chosen for the default buffer (its size moves with free memory).
                        const std::uint64_t page = umapcfg_get_umap_page_size();
                        bool ok = page >= system_page_size() && page <= (1u << 20) && (page & (page - 1)) == 0 &&
                                  (page == system_page_size() || umapcfg_get_max_pages_in_buffer() >= 1023) &&
                                  umapcfg_get_num_fillers() == d.fillers && umapcfg_get_num_evictors() == d.evictors &&
                                  umapcfg_get_max_fault_events() == d.max_fault_events &&
                                  umapcfg_get_read_ahead() == d.read_ahead &&
                                  umapcfg_get_evict_high_water_threshold() == 90 &&
                                  umapcfg_get_evict_low_water_threshold() == 70 &&
                                  umapcfg_get_max_pages_in_buffer() > 0;
                        return ok ? 0 : 3;
                      });
  EXPECT_EQ(code, 0);
}

// As UMap's, a region starts on a UMap page boundary, whatever the page size.
TEST(CApi, RegionsAreAlignedToTheUMapPageSize) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 16 * system_page_size();
  ScratchFile file(8 * page, 4);
  int code = in_child({{"UMAP_PAGESIZE", std::to_string(page).c_str()}}, [&] {
    int fd = open(file.path().c_str(), O_RDONLY);
    for (std::size_t length : {page, 3 * page + 100, 8 * page}) {
      auto* p = static_cast<std::uint8_t*>(umap(nullptr, length, PROT_READ, UMAP_PRIVATE, fd, 0));
      if (p == UMAP_FAILED) return 2;
      if (reinterpret_cast<std::uintptr_t>(p) % page != 0) return 3;
      if (p[length - 1] != pattern_byte(length - 1, 4)) return 4;
    }
    return 0;
  });
  EXPECT_EQ(code, 0);
}

TEST(CApi, FixedMapsExactlyAtTheAddress) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t size = 16 * page;
  ScratchFile file(size, 5);
  const std::string page_text = std::to_string(page);
  int code = in_child({{"UMAP_PAGESIZE", page_text.c_str()}}, [&] {  // the address is aligned to the system page only
    // An address range the program reserved itself, as UMap programs that need one place do.
    void* reserved = mmap(nullptr, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (reserved == MAP_FAILED) return 2;
    char* want = static_cast<char*>(reserved) + size;
    int fd = open(file.path().c_str(), O_RDWR);
    auto* p = static_cast<std::uint8_t*>(umap(want, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE | UMAP_FIXED, fd, 0));
    if (p != reinterpret_cast<std::uint8_t*>(want)) return 3;
    if (p[size - 1] != pattern_byte(size - 1, 5)) return 4;
    p[0] = 0x99;
    // Not over a region already mapped, nor unaligned, nor without an address.
    if (umap(want, size, PROT_READ, UMAP_PRIVATE | UMAP_FIXED, fd, 0) != UMAP_FAILED || errno != EINVAL) return 5;
    if (umap(want + 1, size, PROT_READ, UMAP_PRIVATE | UMAP_FIXED, fd, 0) != UMAP_FAILED || errno != EINVAL) return 6;
    if (umap(nullptr, size, PROT_READ, UMAP_PRIVATE | UMAP_FIXED, fd, 0) != UMAP_FAILED || errno != EINVAL) return 7;
    return uunmap(p, size) == 0 ? 0 : 8;
  });
  ASSERT_EQ(code, 0);
  EXPECT_EQ(file.contents()[0], 0x99);
}

bool resident(const void* address) {
  unsigned char in_core = 0;
  return mincore(const_cast<void*>(address), 1, &in_core) == 0 && (in_core & 1) != 0;
}

TEST(CApi, FetchAndPinKeepsPagesThroughEvictions) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t size = 128 * page;
  ScratchFile file(size, 6);
  const std::string page_text = std::to_string(page);
  // 21 pages: 5 read slots of the one filler and 16 resident pages, whose low water mark is 11.
  int code = in_child({{"UMAP_PAGESIZE", page_text.c_str()}, {"UMAP_BUFSIZE", "21"}, {"UMAP_PAGE_FILLERS", "1"}}, [&] {
    int fd = open(file.path().c_str(), O_RDONLY);
    auto* p = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ, UMAP_PRIVATE, fd, 0));
    if (p == UMAP_FAILED) return 2;
    umap_fetch_and_pin(reinterpret_cast<char*>(p) + 40 * page + 9, 4 * page);  // pages 40 to 44
    for (std::size_t i = 40; i <= 44; ++i)
      if (!resident(p + i * page)) return 3;
    for (int round = 0; round < 3; ++round)
      for (std::size_t i = 0; i < size; i += 1000)
        if (p[i] != pattern_byte(i, 6)) return 4;
    for (std::size_t i = 40; i <= 44; ++i)
      if (!resident(p + i * page)) return 5;
    // The others went through the buffer meanwhile: 16 pages with the pins, 123 if nothing were evicted. Which of
    // them are still in it is the policy's choice (hotfifo keeps pages that came back, as all of these did).
    std::size_t others = 0;
    for (std::size_t i = 0; i < size / page; ++i)
      if ((i < 40 || i > 44) && resident(p + i * page)) ++others;
    if (others > 32) return 6;
    errno = 0;
    umap_fetch_and_pin(reinterpret_cast<char*>(p), 7 * page);  // 12 pinned: more than the low water mark
    if (errno != ENOMEM) return 7;
    errno = 0;
    int outside = 0;
    umap_fetch_and_pin(reinterpret_cast<char*>(&outside), 1);
    if (errno != EINVAL) return 8;
    if (uunmap(p, size) != 0) return 9;
    // Unmapping gave the pins back: a new region may pin as many.
    p = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ, UMAP_PRIVATE, fd, 0));
    errno = 0;
    umap_fetch_and_pin(reinterpret_cast<char*>(p), 11 * page);
    if (errno != 0 || !resident(p + 10 * page)) return 10;
    return uunmap(p, size) == 0 ? 0 : 11;
  });
  EXPECT_EQ(code, 0);
}

// Runs `body` in a child whose stderr goes to a file; returns what it wrote there.
template <typename Body>
std::string child_stderr(const std::vector<std::pair<const char*, const char*>>& env, Body body) {
  char name[] = "/tmp/autopager-stderr-XXXXXX";
  int fd = mkstemp(name);
  int code = in_child(env, [&] {
    dup2(fd, 2);
    return body();
  });
  close(fd);
  std::ifstream in(name);
  std::stringstream text;
  text << in.rdbuf();
  unlink(name);
  EXPECT_EQ(code, 0) << text.str();
  return text.str();
}

TEST(CApi, MonitorFreqPrintsStatisticsPeriodically) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(4 * system_page_size(), 7);
  std::string text = child_stderr({{"UMAP_MONITOR_FREQ", "1"}}, [&] {
    int fd = open(file.path().c_str(), O_RDONLY);
    auto* p = static_cast<std::uint8_t*>(umap(nullptr, 4 * system_page_size(), PROT_READ, UMAP_PRIVATE, fd, 0));
    if (p == UMAP_FAILED || p[0] != pattern_byte(0, 7)) return 2;
    // Waits for two lines (at most a minute, so that a loaded machine is no failure).
    for (int waited = 0; waited < 600; ++waited) {
      std::ifstream err("/proc/self/fd/2");
      std::string all((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      std::size_t first = all.find("autopager monitor: {");
      if (first != std::string::npos && all.find("autopager monitor: {", first + 1) != std::string::npos) return 0;
      usleep(100000);
    }
    return 3;
  });
  EXPECT_NE(text.find("\"read_faults\": 1"), std::string::npos) << text;
}

TEST(CApi, LogLevelInfoReportsThePagerAndItsRegions) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(4 * system_page_size(), 8);
  auto map_and_unmap = [&] {
    int fd = open(file.path().c_str(), O_RDONLY);
    void* p = umap(nullptr, 4 * system_page_size(), PROT_READ, UMAP_PRIVATE, fd, 0);
    return p != UMAP_FAILED && uunmap(p, 4 * system_page_size()) == 0 ? 0 : 2;
  };
  std::string info = child_stderr({{"UMAP_LOG_LEVEL", "INFO"}}, map_and_unmap);
  EXPECT_NE(info.find("autopager [INFO] pager started: {"), std::string::npos) << info;
  EXPECT_NE(info.find("autopager [INFO] mapped 16384 bytes"), std::string::npos) << info;
  EXPECT_NE(info.find("autopager [INFO] unmapped"), std::string::npos) << info;
  std::string quiet = child_stderr({}, map_and_unmap);
  EXPECT_EQ(quiet, "");
}

}  // namespace
}  // namespace autopager
