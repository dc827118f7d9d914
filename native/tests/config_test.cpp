#include <algorithm>
#include <cstdlib>
#include <string>

#include "test_util.hpp"

namespace autopager {
namespace {

// Sets environment variables for one test and restores them after.
class EnvGuard {
 public:
  ~EnvGuard() {
    for (const auto& name : names_) unsetenv(name.c_str());
  }
  void set(const char* name, const char* value) {
    setenv(name, value, 1);
    names_.push_back(name);
  }

 private:
  std::vector<std::string> names_;
};

std::string refusal(const Config& c) {
  try {
    c.validate();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string env_refusal(const char* name, const char* value) {
  EnvGuard env;
  env.set(name, value);
  try {
    Config::from_environment();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAreValidAndFollowTheDesign) {
  Config c = Config::defaults();
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.page_size, page_size_for_buffer(c.buffer_bytes()));
  EXPECT_EQ(c.fillers, 2 * hardware_threads());
  EXPECT_EQ(c.evictors, std::max(1u, hardware_threads() / 2));
  EXPECT_EQ(c.max_fault_events, hardware_threads());
  EXPECT_EQ(c.evict_high_water, 90u);
  EXPECT_EQ(c.evict_low_water, 70u);
  EXPECT_EQ(c.read_ahead, 2u);
  EXPECT_TRUE(c.direct_io);
  EXPECT_GE(c.buffer_pages, 1u);
}

TEST(Config, EnvironmentOverridesDefaults) {
  EnvGuard env;
  env.set("UMAP_PAGESIZE", "65536");
  env.set("UMAP_PAGE_FILLERS", "7");
  env.set("UMAP_PAGE_EVICTORS", "3");
  env.set("UMAP_BUFSIZE", "100");
  env.set("UMAP_EVICT_HIGH_WATER_THRESHOLD", "80");
  env.set("UMAP_EVICT_LOW_WATER_THRESHOLD", "50");
  env.set("UMAP_READ_AHEAD", "4");
  env.set("UMAP_MAX_FAULT_EVENTS", "16");
  env.set("UMAP_DIRECT_IO", "1");
  Config base = Config::defaults();
  base.direct_io = false;
  Config c = Config::from_environment(base);
  EXPECT_EQ(c.page_size, 65536u);
  EXPECT_EQ(c.fillers, 7u);
  EXPECT_EQ(c.evictors, 3u);
  EXPECT_EQ(c.buffer_pages, 100u);
  EXPECT_EQ(c.evict_high_water, 80u);
  EXPECT_EQ(c.evict_low_water, 50u);
  EXPECT_EQ(c.read_ahead, 4u);
  EXPECT_EQ(c.max_fault_events, 16u);
  EXPECT_TRUE(c.direct_io);
}

TEST(Config, DefaultBufferKeepsItsBytesWhenOnlyThePageSizeChanges) {
  EnvGuard env;
  env.set("UMAP_PAGESIZE", std::to_string(system_page_size() * 16).c_str());
  Config base = Config::defaults();
  Config c = Config::from_environment(base);
  EXPECT_EQ(c.page_size, system_page_size() * 16);
  EXPECT_EQ(c.buffer_pages, base.buffer_bytes() / c.page_size);
}

TEST(Config, PageSizeForBufferHoldsAThousandPagesUpToOneMiB) {
  const std::size_t sys = system_page_size();
  const std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(page_size_for_buffer(0), sys);
  EXPECT_EQ(page_size_for_buffer(sys), sys);
  EXPECT_EQ(page_size_for_buffer(1024 * sys - 1), sys);
  EXPECT_EQ(page_size_for_buffer(8 * MiB), std::max<std::size_t>(sys, 8 << 10));
  EXPECT_EQ(page_size_for_buffer(8 * MiB - 1), std::max<std::size_t>(sys, 4 << 10));
  EXPECT_EQ(page_size_for_buffer(64 * MiB), std::max<std::size_t>(sys, 64 << 10));
  EXPECT_EQ(page_size_for_buffer(100 * MiB), std::max<std::size_t>(sys, 64 << 10));  // 100 KiB: not a power of two
  EXPECT_EQ(page_size_for_buffer(1024 * MiB), MiB);
  EXPECT_EQ(page_size_for_buffer(64ull << 30), MiB);  // at most 1 MiB, however large the buffer
  for (std::uint64_t bytes = sys; bytes < (4ull << 30); bytes = bytes * 3 + 1) {
    std::size_t page = page_size_for_buffer(bytes);
    EXPECT_EQ(page & (page - 1), 0u) << bytes;
    EXPECT_EQ(page % sys, 0u) << bytes;
    EXPECT_TRUE(page == sys || bytes / page >= 1024) << bytes;
    EXPECT_TRUE(page == MiB || bytes / page < 2048) << bytes;  // the largest such power of two
  }
}

TEST(Config, ReadAheadRunIsCheckedAndRead) {
  EXPECT_EQ(Config::defaults().read_ahead_run, std::size_t{1} << 20);
  {
    EnvGuard env;
    env.set("UMAP_READ_AHEAD_RUN", std::to_string(system_page_size() * 64).c_str());
    EXPECT_EQ(Config::from_environment().read_ahead_run, system_page_size() * 64);
  }
  EXPECT_NE(env_refusal("UMAP_READ_AHEAD_RUN", std::to_string(system_page_size() * 64 + 1).c_str())
                .find("read_ahead_run (UMAP_READ_AHEAD_RUN)"),
            std::string::npos);
  EXPECT_NE(env_refusal("UMAP_READ_AHEAD_RUN", "1073741824").find("out of range"), std::string::npos);
}

TEST(Config, BufferInSystemPagesWithoutAPageSizeKeepsItsBytes) {
  EnvGuard env;
  const std::uint64_t sys = system_page_size();
  // UMap counts UMAP_BUFSIZE in its default pages (the system page) when no page size is given.
  const std::uint64_t MiB = 1 << 20;
  for (std::uint64_t pages : {std::uint64_t{2}, std::uint64_t{1000}, std::uint64_t{2048}, 64 * MiB / sys,
                              1024 * MiB / sys, 1024 * MiB / sys + 3}) {
    env.set("UMAP_BUFSIZE", std::to_string(pages).c_str());
    Config c = Config::from_environment();
    EXPECT_EQ(c.page_size, page_size_for_buffer(pages * sys)) << pages;
    EXPECT_EQ(c.buffer_pages, pages * sys / c.page_size) << pages;  // the whole pages of those bytes
    EXPECT_GT(c.buffer_bytes() + c.page_size, pages * sys) << pages;
  }
  env.set("UMAP_BUFSIZE", std::to_string(1024 * MiB / sys).c_str());
  EXPECT_EQ(Config::from_environment().page_size, std::size_t{1} << 20);
}

// Read-only regions take the system page (doubled past 4 Mi pages of buffer), writable ones the buffer's page;
// a page size given is every region's, and a buffer given alone gets both pages chosen for it.
TEST(Config, ReadOnlyRegionsTakeTheSystemPageUnlessAPageSizeIsGiven) {
  const std::size_t sys = system_page_size();
  const Config defaults = Config::defaults();
  EXPECT_EQ(defaults.read_only_page_size, read_only_page_size_for_buffer(defaults.buffer_bytes()));
  EXPECT_EQ(defaults.page_size_for(true), defaults.page_size);
  EXPECT_EQ(defaults.page_size_for(false), defaults.read_only_page_size);
  EXPECT_EQ(read_only_page_size_for_buffer(std::uint64_t{1} << 30), sys);
  EXPECT_EQ(read_only_page_size_for_buffer((std::uint64_t{4} << 20) * sys), sys);
  EXPECT_EQ(read_only_page_size_for_buffer((std::uint64_t{4} << 20) * sys + sys), 2 * sys);
  EXPECT_EQ(defaults.read_around, std::size_t{4} << 20);
  EnvGuard env;
  env.set("UMAP_BUFSIZE", std::to_string((std::uint64_t{1} << 30) / sys).c_str());
  Config buffer_only = Config::from_environment();
  EXPECT_EQ(buffer_only.page_size, std::size_t{1} << 20);
  EXPECT_EQ(buffer_only.page_size_for(false), sys);
  env.set("UMAP_PAGESIZE", std::to_string(16 * sys).c_str());
  Config given = Config::from_environment();
  EXPECT_EQ(given.read_only_page_size, 0u);
  EXPECT_EQ(given.page_size_for(false), 16 * sys);
  EXPECT_EQ(given.page_size_for(true), 16 * sys);
  // A read-only page larger than a page size set in code is that page size.
  Config smaller = Config::defaults();
  smaller.read_only_page_size = 8 * sys;
  smaller.page_size = 2 * sys;
  EXPECT_EQ(smaller.page_size_for(false), 2 * sys);
  EXPECT_NO_THROW(smaller.validate());
  smaller.read_only_page_size = sys + 512;
  EXPECT_NE(refusal(smaller).find("read_only_page_size"), std::string::npos);
}

TEST(Config, ReadAroundIsCheckedReadAndTurnedOffByZero) {
  EnvGuard env;
  env.set("UMAP_READ_AROUND", "0");
  EXPECT_EQ(Config::from_environment().read_around, 0u);
  env.set("UMAP_READ_AROUND", std::to_string(system_page_size() * 32).c_str());
  EXPECT_EQ(Config::from_environment().read_around, system_page_size() * 32);
  EXPECT_NE(env_refusal("UMAP_READ_AROUND", "1000").find("read_around (UMAP_READ_AROUND) = 1000: not a multiple"),
            std::string::npos);
  EXPECT_NE(env_refusal("UMAP_READ_AROUND", "1099511627776").find("out of range"), std::string::npos);
}

// The variables README.md gives for UMap's defaults.
TEST(Config, VariablesReproduceUMapsDefaults) {
  EnvGuard env;
  const std::size_t sys = system_page_size();
  const std::string threads = std::to_string(hardware_threads());
  env.set("UMAP_PAGESIZE", std::to_string(sys).c_str());
  env.set("UMAP_READ_AHEAD", "0");
  env.set("UMAP_READ_AROUND", "0");
  env.set("UMAP_DIRECT_IO", "0");
  env.set("UMAP_PAGE_FILLERS", threads.c_str());
  env.set("UMAP_PAGE_EVICTORS", threads.c_str());
  Config base = Config::defaults();
  base.page_size = std::size_t{1} << 20;
  base.buffer_pages = 300;
  Config c = Config::from_environment(base);
  EXPECT_EQ(c.page_size, sys);
  EXPECT_EQ(c.page_size_for(false), sys);
  EXPECT_EQ(c.read_ahead, 0u);
  EXPECT_EQ(c.read_around, 0u);
  EXPECT_FALSE(c.direct_io);
  EXPECT_EQ(c.fillers, hardware_threads());
  EXPECT_EQ(c.evictors, hardware_threads());
  EXPECT_EQ(c.evict_high_water, 90u);
  EXPECT_EQ(c.evict_low_water, 70u);
  EXPECT_EQ(c.buffer_bytes(), 300u << 20);  // the default buffer's bytes, in system pages
  env.set("UMAP_BUFSIZE", "1000");  // with a page size, UMAP_BUFSIZE is in pages of it, as in UMap
  c = Config::from_environment(base);
  EXPECT_EQ(c.page_size, sys);
  EXPECT_EQ(c.buffer_pages, 1000u);
}

TEST(Config, RefusesABufferInSystemPagesLargerThanMemory) {
  std::string why = env_refusal("UMAP_BUFSIZE", "18446744073709551615");
  EXPECT_NE(why.find("UMAP_BUFSIZE"), std::string::npos) << why;
  EXPECT_NE(why.find("larger than physical memory"), std::string::npos) << why;
}

TEST(Config, RefusesWhatIsNotANumber) {
  std::string why = env_refusal("UMAP_PAGE_FILLERS", "many");
  EXPECT_NE(why.find("UMAP_PAGE_FILLERS"), std::string::npos) << why;
  EXPECT_NE(why.find("not a number"), std::string::npos) << why;
  EXPECT_NE(env_refusal("UMAP_BUFSIZE", "-5"), "");
  EXPECT_NE(env_refusal("UMAP_PAGESIZE", "4k"), "");
  EXPECT_NE(env_refusal("UMAP_READ_AHEAD", ""), "");
  EXPECT_NE(env_refusal("UMAP_PAGE_EVICTORS", "99999999999999999999999"), "");
}

TEST(Config, RefusesOutOfRangeWithTheAllowedRange) {
  std::string why = env_refusal("UMAP_PAGE_FILLERS", "5000");
  EXPECT_NE(why.find("fillers (UMAP_PAGE_FILLERS) = 5000"), std::string::npos) << why;
  EXPECT_NE(why.find("from 1 to 1024"), std::string::npos) << why;
  EXPECT_NE(env_refusal("UMAP_PAGE_EVICTORS", "2000"), "");
  EXPECT_NE(env_refusal("UMAP_EVICT_HIGH_WATER_THRESHOLD", "101"), "");
  EXPECT_NE(env_refusal("UMAP_MAX_FAULT_EVENTS", "100000"), "");
  EXPECT_NE(env_refusal("UMAP_READ_AHEAD", "99999999"), "");
  EXPECT_NE(env_refusal("UMAP_MONITOR_FREQ", "999999999"), "");
  EXPECT_NE(env_refusal("UMAP_DIRECT_IO", "2").find("direct_io (UMAP_DIRECT_IO) = 2"), std::string::npos);
  EXPECT_NE(env_refusal("UMAP_EVICT_RETAIN", "100").find("evict_retain (UMAP_EVICT_RETAIN) = 100"), std::string::npos);
}

// UMap reads a variable set to 0 as not set: its default.
TEST(Config, ZeroMeansTheDefaultAsInUMap) {
  EnvGuard env;
  for (const char* name : {"UMAP_PAGESIZE", "UMAP_PAGE_FILLERS", "UMAP_PAGE_EVICTORS", "UMAP_BUFSIZE",
                           "UMAP_EVICT_HIGH_WATER_THRESHOLD", "UMAP_EVICT_LOW_WATER_THRESHOLD",
                           "UMAP_MAX_FAULT_EVENTS", "UMAP_MONITOR_FREQ"})
    env.set(name, "0");
  Config base = Config::defaults();
  base.page_size = system_page_size() * 2;
  base.buffer_pages = 1234;
  Config c = Config::from_environment(base);
  EXPECT_EQ(c.page_size, base.page_size);
  EXPECT_EQ(c.fillers, base.fillers);
  EXPECT_EQ(c.evictors, base.evictors);
  EXPECT_EQ(c.buffer_pages, 1234u);
  EXPECT_EQ(c.evict_high_water, 90u);
  EXPECT_EQ(c.evict_low_water, 70u);
  EXPECT_EQ(c.max_fault_events, base.max_fault_events);
  EXPECT_EQ(c.monitor_interval, 0u);
}

// Read-ahead and O_DIRECT are on by default; 0 turns them off (UMap reads nothing ahead and has no O_DIRECT),
// and the retained share of a base (a profile) too.
TEST(Config, ZeroTurnsReadAheadDirectIoAndTheRetainedShareOff) {
  EnvGuard env;
  env.set("UMAP_READ_AHEAD", "0");
  env.set("UMAP_DIRECT_IO", "0");
  env.set("UMAP_EVICT_RETAIN", "0");
  Config base = Config::defaults();
  ASSERT_GT(base.read_ahead, 0u);
  ASSERT_TRUE(base.direct_io);
  EXPECT_EQ(base.evict_retain, 0u);
  base.evict_retain = 40;
  Config c = Config::from_environment(base);
  EXPECT_EQ(c.read_ahead, 0u);
  EXPECT_FALSE(c.direct_io);
  EXPECT_EQ(c.evict_retain, 0u);
  env.set("UMAP_READ_AHEAD", "3");
  env.set("UMAP_DIRECT_IO", "1");
  env.set("UMAP_EVICT_RETAIN", "60");
  c = Config::from_environment(c);
  EXPECT_EQ(c.read_ahead, 3u);
  EXPECT_TRUE(c.direct_io);
  EXPECT_EQ(c.evict_retain, 60u);
}

// The eviction policy by name, in any case, FIFO by default; another name is refused naming the variable and
// the policies, and the policy shows in the configuration's text.
TEST(Config, EvictionPolicyFromTheEnvironment) {
  EnvGuard env;
  EXPECT_EQ(Config::defaults().eviction, Eviction::kFifo);
  env.set("UMAP_EVICTION", "S3FIFO");
  Config c = Config::from_environment();
  EXPECT_EQ(c.eviction, Eviction::kS3Fifo);
  EXPECT_NE(c.to_string().find("\"eviction\": \"s3fifo\""), std::string::npos) << c.to_string();
  for (const char* name : {"fifo", "hotfifo", "clock"}) {
    env.set("UMAP_EVICTION", name);
    EXPECT_STREQ(eviction_name(Config::from_environment().eviction), name);
  }
  std::string why = env_refusal("UMAP_EVICTION", "lru");
  EXPECT_NE(why.find("eviction (UMAP_EVICTION) = \"lru\""), std::string::npos) << why;
  EXPECT_NE(why.find("fifo, hotfifo, s3fifo, clock"), std::string::npos) << why;
}

TEST(Config, MonitorIntervalAndLogLevelFromTheEnvironment) {
  EnvGuard env;
  env.set("UMAP_MONITOR_FREQ", "3");
  env.set("UMAP_LOG_LEVEL", "debug");  // UMap's names, in any case
  Config c = Config::from_environment();
  EXPECT_EQ(c.monitor_interval, 3u);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(Config::defaults().log_level, LogLevel::kWarning);
  for (const char* name : {"ERROR", "Warning", "info"}) {
    env.set("UMAP_LOG_LEVEL", name);
    EXPECT_NO_THROW(Config::from_environment()) << name;
  }
  std::string why = env_refusal("UMAP_LOG_LEVEL", "loud");
  EXPECT_NE(why.find("UMAP_LOG_LEVEL"), std::string::npos) << why;
  EXPECT_NE(why.find("ERROR, WARNING, INFO, DEBUG"), std::string::npos) << why;
}

TEST(Config, CompressionFromTheEnvironment) {
  EnvGuard env;
  EXPECT_EQ(Config::defaults().compression, Compression::none);
  env.set("UMAP_COMPRESSION", "LZ4");
  EXPECT_EQ(Config::from_environment().compression, Compression::lz4);
  env.set("UMAP_COMPRESSION", "2");  // the tuner's index
  EXPECT_EQ(Config::from_environment().compression, Compression::zstd);
  EXPECT_NE(Config::from_environment().to_string().find("\"compression\": \"zstd\""), std::string::npos);
  std::string why = env_refusal("UMAP_COMPRESSION", "gzip");
  EXPECT_NE(why.find("UMAP_COMPRESSION"), std::string::npos) << why;
  EXPECT_NE(why.find("none, lz4, zstd"), std::string::npos) << why;
}

TEST(Config, RefusesLowWaterAtOrAboveHighWater) {
  Config c = Config::defaults();
  c.evict_high_water = 60;
  c.evict_low_water = 60;
  std::string why = refusal(c);
  EXPECT_NE(why.find("evict_low_water (UMAP_EVICT_LOW_WATER_THRESHOLD) = 60"), std::string::npos) << why;
  EXPECT_NE(why.find("below evict_high_water"), std::string::npos) << why;
  c.evict_low_water = 75;
  EXPECT_NE(refusal(c), "");
}

TEST(Config, RefusesAPageSizeThatIsNotAMultipleOfTheSystemPage) {
  Config c = Config::defaults();
  c.page_size = system_page_size() + 512;
  std::string why = refusal(c);
  EXPECT_NE(why.find("UMAP_PAGESIZE"), std::string::npos) << why;
  EXPECT_NE(why.find("not a multiple of the system page size"), std::string::npos) << why;
  c.page_size = 0;
  EXPECT_NE(refusal(c), "");
}

// One page cannot hold a filler's read slot and a resident page: the buffer_size counts both.
TEST(Config, RefusesABufferSmallerThanTwoPages) {
  Config c = Config::defaults();
  for (std::uint64_t pages : {0, 1}) {
    c.buffer_pages = pages;
    std::string why = refusal(c);
    EXPECT_NE(why.find("UMAP_BUFSIZE"), std::string::npos) << why;
    EXPECT_NE(why.find("smaller than two pages"), std::string::npos) << why;
  }
  c.buffer_pages = 2;
  EXPECT_EQ(refusal(c), "");
}

TEST(Config, APagerRefusesABadConfiguration) {
  Config c = Config::defaults();
  c.evict_low_water = 95;
  EXPECT_THROW(Pager{c}, ConfigError);
}

// parameter_limits() is what from_environment and validate check: each maximum is accepted through the
// parameter's variable and one past it refused, naming the parameter (autopager/parameters.py copies the table).
TEST(Config, ParameterLimitsAreTheOnesChecked) {
  const std::vector<ParameterLimits> limits = parameter_limits();
  ASSERT_FALSE(limits.empty());
  for (const ParameterLimits& p : limits) {
    if (p.name == "page_size" || p.name == "buffer_size") continue;  // in bytes and pages of each other: below
    EnvGuard env;
    if (p.name == "evict_low_water") env.set("UMAP_EVICT_HIGH_WATER_THRESHOLD", "100");
    EXPECT_EQ(env_refusal(p.env.c_str(), std::to_string(p.max).c_str()), "") << p.name;
    EXPECT_NE(env_refusal(p.env.c_str(), std::to_string(p.max + 1).c_str()).find(p.name + " (" + p.env + ")"),
              std::string::npos)
        << p.name;
  }
  const auto page = std::find_if(limits.begin(), limits.end(), [](const auto& p) { return p.name == "page_size"; });
  ASSERT_NE(page, limits.end());
  EXPECT_EQ(page->min, system_page_size());
  Config c = Config::defaults();
  c.buffer_pages = 2;
  c.page_size = page->max;
  EXPECT_EQ(refusal(c), "");
  c.page_size = page->max + system_page_size();
  EXPECT_NE(refusal(c).find("page_size (UMAP_PAGESIZE)"), std::string::npos);
  c.page_size = page->min;
  const auto buffer = std::find_if(limits.begin(), limits.end(), [](const auto& p) { return p.name == "buffer_size"; });
  ASSERT_NE(buffer, limits.end());
  c.buffer_pages = buffer->min - 1;
  EXPECT_NE(refusal(c).find("buffer_size (UMAP_BUFSIZE)"), std::string::npos);
  c.buffer_pages = buffer->max + 1;
  EXPECT_NE(refusal(c).find("buffer_size (UMAP_BUFSIZE)"), std::string::npos);
}

}  // namespace
}  // namespace autopager
