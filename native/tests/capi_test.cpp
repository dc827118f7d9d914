#include <sys/wait.h>

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

}  // namespace
}  // namespace autopager
