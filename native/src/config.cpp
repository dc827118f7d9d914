#include "autopager/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <strings.h>
#include <thread>

#include "memory_limit.hpp"

namespace autopager {
namespace {

constexpr std::uint64_t kMaxThreads = 1024;
constexpr std::uint64_t kMaxFaultEvents = 4096;
constexpr std::uint64_t kMaxReadAhead = 1 << 20;
constexpr std::uint64_t kMaxPageSize = 1ull << 30;
// Bounds of the writable regions' page size chosen from the buffer: a buffer of at least this many pages, and
// pages of at most 1 MiB. The system page for every region (issue 45) read 6.8x faster on binary-search lookups
// and 17.6x on LMDB's readrandom, but sorted 2.2x and streamed 2.8x slower (results/defaults-adaptive): so only
// read-only regions take the system page.
constexpr std::uint64_t kDefaultBufferPages = 1024;
constexpr std::uint64_t kMostDefaultPageSize = 1ull << 20;
// The most pages the default read-only page leaves a buffer: each resident page costs the eviction policy's
// queue an entry (about 24 bytes), 96 MiB at this many.
constexpr std::uint64_t kMostReadOnlyBufferPages = 4ull << 20;
constexpr std::uint64_t kMaxReadAround = 256ull << 20;
constexpr std::uint64_t kDefaultReadAround = 4ull << 20;
constexpr std::uint64_t kMaxReadAheadRun = 256ull << 20;
constexpr std::uint64_t kMaxMonitorInterval = 24 * 3600;

struct Parameter {
  const char* name;
  const char* env;
  std::uint64_t min;
  std::uint64_t max;
  const char* unit = "";
  // A variable set to 0 turns the parameter off instead of leaving it as it was (UMap's rule for the
  // others): it is on by default, and 0 is how UMap's behaviour (no read-ahead, the page cache) is had.
  bool zero_turns_off = false;
};
// kPageSize's and kReadAheadRun's min is the system page size and kBuffer's max the pages of physical memory,
// all known only at run time (validate, parameter_limits).
constexpr Parameter kPageSize{"page_size", "UMAP_PAGESIZE", 0, kMaxPageSize, "bytes"};
constexpr Parameter kFillers{"fillers", "UMAP_PAGE_FILLERS", 1, kMaxThreads};
constexpr Parameter kEvictors{"evictors", "UMAP_PAGE_EVICTORS", 1, kMaxThreads};
constexpr Parameter kBuffer{"buffer_size", "UMAP_BUFSIZE", 2, 0, "pages"};
constexpr Parameter kHighWater{"evict_high_water", "UMAP_EVICT_HIGH_WATER_THRESHOLD", 1, 100, "percent"};
constexpr Parameter kLowWater{"evict_low_water", "UMAP_EVICT_LOW_WATER_THRESHOLD", 0, 99, "percent"};
constexpr Parameter kRetain{"evict_retain", "UMAP_EVICT_RETAIN", 0, 99, "percent", true};
constexpr Parameter kReadAhead{"read_ahead", "UMAP_READ_AHEAD", 0, kMaxReadAhead, "pages", true};
constexpr Parameter kReadAheadRun{"read_ahead_run", "UMAP_READ_AHEAD_RUN", 0, kMaxReadAheadRun, "bytes"};
constexpr Parameter kReadAround{"read_around", "UMAP_READ_AROUND", 0, kMaxReadAround, "bytes", true};
constexpr Parameter kFaultEvents{"max_fault_events", "UMAP_MAX_FAULT_EVENTS", 1, kMaxFaultEvents};
constexpr Parameter kDirectIo{"direct_io", "UMAP_DIRECT_IO", 0, 1, "", true};
constexpr Parameter kKeepWrites{"keep_writes", "UMAP_KEEP_WRITES", 0, 1, "", true};
constexpr Parameter kMonitor{"monitor_interval", "UMAP_MONITOR_FREQ", 0, kMaxMonitorInterval, "seconds"};
constexpr const Parameter* kParameters[] = {&kPageSize,    &kFillers,   &kEvictors,    &kBuffer,     &kHighWater,
                                            &kLowWater,    &kRetain,    &kReadAhead,   &kReadAheadRun,
                                            &kReadAround,  &kFaultEvents, &kDirectIo,  &kKeepWrites,  &kMonitor};
constexpr const char* kLogLevelEnv = "UMAP_LOG_LEVEL";
constexpr const char* kLogLevelNames[] = {"ERROR", "WARNING", "INFO", "DEBUG"};
constexpr const char* kEvictionEnv = "UMAP_EVICTION";
constexpr const char* kEvictionNames[] = {"fifo", "hotfifo", "s3fifo", "clock"};
constexpr const char* kHugePagesEnv = "UMAP_HUGE_PAGES";
constexpr const char* kHugePagesNames[] = {"off", "on", "auto"};
// UMap's paper spells this one without the underscores; both are read.
constexpr const char* kFaultEventsAlias = "UMAP_MAXFAULTEVENTS";

std::uint64_t physical_memory() {
  return static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * system_page_size();
}

std::uint64_t max_buffer_pages(std::size_t page_size) { return physical_memory() / page_size; }

std::uint64_t default_buffer_bytes() { return usable_memory() / 10 * 8; }

[[noreturn]] void refuse(const Parameter& p, std::uint64_t value, const std::string& why, const std::string& allowed) {
  std::ostringstream out;
  out << p.name << " (" << p.env << ") = " << value << ": " << why << "; allowed: " << allowed;
  throw ConfigError(out.str());
}

// What `p` allows, for its messages; a buffer's pages are of `page_size`.
std::string allowed(const Parameter& p, std::size_t page_size = system_page_size()) {
  std::ostringstream out;
  if (&p == &kPageSize || &p == &kReadAheadRun || &p == &kReadAround) {
    const std::size_t sys = system_page_size();
    out << "a multiple of the system page size " << sys << " from " << (&p == &kReadAround ? 0 : sys) << " to "
        << p.max;
  } else if (&p == &kBuffer) {
    out << "from " << p.min << " to " << max_buffer_pages(page_size) << " pages of " << page_size
        << " bytes (physical memory)";
  } else {
    out << "an integer from " << p.min << " to " << p.max << (*p.unit ? " " : "") << p.unit;
  }
  return out.str();
}

void check_range(const Parameter& p, std::uint64_t value) {
  if (value < p.min || value > p.max) refuse(p, value, "out of range", allowed(p));
}

// Reads a variable as a non-negative integer; returns false when it is not set.
bool read_env(const Parameter& p, const char* env, std::uint64_t* out) {
  const char* text = std::getenv(env);
  if (text == nullptr) return false;
  const char* start = text;
  while (*start == ' ') ++start;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(start, &end, 10);
  while (end != nullptr && *end == ' ') ++end;
  if (*start < '0' || *start > '9' || errno == ERANGE || end == start || *end != '\0') {
    std::ostringstream out;
    out << p.env << "=\"" << text << "\" is not a number; " << p.name << " takes " << allowed(p)
        << (p.zero_turns_off ? " (0: off)" : " (0: the pager's own)");
    throw ConfigError(out.str());
  }
  *out = value;
  return true;
}

// UMap's rule: a variable set to 0 leaves the value as it was, unless 0 turns the parameter off.
template <typename T>
void read_env_into(const Parameter& p, T* field, const char* env = nullptr) {
  std::uint64_t value;
  if (!read_env(p, env ? env : p.env, &value) || (value == 0 && !p.zero_turns_off)) return;
  if (value > std::numeric_limits<T>::max()) {
    refuse(p, value, "out of range", "at most " + std::to_string(std::numeric_limits<T>::max()));
  }
  *field = static_cast<T>(value);
}

void read_log_level(LogLevel* level) {
  const char* text = std::getenv(kLogLevelEnv);
  if (text == nullptr) return;
  for (unsigned i = 0; i < sizeof kLogLevelNames / sizeof *kLogLevelNames; ++i) {
    if (strcasecmp(text, kLogLevelNames[i]) == 0) {
      *level = static_cast<LogLevel>(i);
      return;
    }
  }
  throw ConfigError(std::string(kLogLevelEnv) + "=\"" + text + "\" is not a level; allowed: ERROR, WARNING, INFO, DEBUG");
}

void read_compression(Compression* compression) {
  const char* text = std::getenv("UMAP_COMPRESSION");
  if (text == nullptr || *text == '\0') return;
  if (!parse_compression(text, compression))
    throw ConfigError(std::string("UMAP_COMPRESSION=\"") + text + "\" is not a compression; allowed: none, lz4, zstd (or 0, 1, 2)");
}

}  // namespace

const char* eviction_name(Eviction eviction) { return kEvictionNames[static_cast<unsigned>(eviction)]; }

Eviction eviction_from_name(const std::string& name) {
  for (unsigned i = 0; i < sizeof kEvictionNames / sizeof *kEvictionNames; ++i)
    if (strcasecmp(name.c_str(), kEvictionNames[i]) == 0) return static_cast<Eviction>(i);
  throw ConfigError(std::string("eviction (") + kEvictionEnv + ") = \"" + name +
                    "\" is not an eviction policy; allowed: fifo, hotfifo, s3fifo, clock");
}

const char* huge_pages_name(HugePages huge_pages) { return kHugePagesNames[static_cast<unsigned>(huge_pages)]; }

HugePages huge_pages_from_name(const std::string& name) {
  for (unsigned i = 0; i < sizeof kHugePagesNames / sizeof *kHugePagesNames; ++i)
    if (strcasecmp(name.c_str(), kHugePagesNames[i]) == 0 || name == std::to_string(i)) return static_cast<HugePages>(i);
  throw ConfigError(std::string("huge_pages (") + kHugePagesEnv + ") = \"" + name +
                    "\" is not a choice; allowed: off, on, auto (or 0, 1, 2)");
}

const char* log_level_name(LogLevel level) { return kLogLevelNames[static_cast<unsigned>(level)]; }

std::size_t system_page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

std::size_t page_size_for_buffer(std::uint64_t buffer_bytes) {
  const std::uint64_t sys = system_page_size();
  std::uint64_t page = sys;
  while (page * 2 <= kMostDefaultPageSize && page * 2 <= buffer_bytes / kDefaultBufferPages) page *= 2;
  return static_cast<std::size_t>(page);
}

std::size_t read_only_page_size_for_buffer(std::uint64_t buffer_bytes) {
  std::uint64_t page = system_page_size();
  while (buffer_bytes / page > kMostReadOnlyBufferPages) page *= 2;
  return static_cast<std::size_t>(page);
}

Config Config::defaults() {
  Config c;
  const std::uint64_t buffer_bytes = default_buffer_bytes();
  c.page_size = page_size_for_buffer(buffer_bytes);
  c.read_only_page_size = read_only_page_size_for_buffer(buffer_bytes);
  // The fastest settings measured out of core (experiments/bench_workloads.py, sort and bfs on two cores:
  // O_DIRECT, read_ahead 2, four fillers and one evictor; the tuner found the same). A filler mostly waits
  // on its reads; O_DIRECT copies a page once, not twice through the page cache, and loses the kernel's
  // read-ahead, which read_ahead makes up for along sequential streams only (read_ahead.hpp).
  c.fillers = static_cast<unsigned>(std::min<std::uint64_t>(2 * hardware_threads(), kMaxThreads));
  c.evictors = std::max(1u, hardware_threads() / 2);
  c.buffer_pages = std::max<std::uint64_t>(buffer_bytes / c.page_size, 1);
  c.evict_high_water = 90;
  c.evict_low_water = 70;
  c.read_ahead = 2;
  c.read_around = kDefaultReadAround;
  c.max_fault_events = hardware_threads();
  c.direct_io = true;
  // Off: keeping writes through the process's death (shared memory a keeper holds) streamed 10-25% slower at
  // 1 MiB pages (results/defaults-adaptive); UMAP_KEEP_WRITES=1 turns it on.
  c.keep_writes = false;
  return c;
}

Config Config::from_environment(const Config& base) {
  Config c = base;
  std::uint64_t page_size = 0, buffer_pages = 0;
  read_env_into(kPageSize, &page_size);
  read_env_into(kBuffer, &buffer_pages);
  if (page_size != 0) {
    // The buffer given in pages of this page size, else base's buffer in bytes.
    c.page_size = page_size;
    c.read_only_page_size = 0;
    c.buffer_pages = buffer_pages != 0 ? buffer_pages : std::max<std::uint64_t>(base.buffer_bytes() / page_size, 1);
  } else if (buffer_pages != 0) {
    // As UMap, UMAP_BUFSIZE without UMAP_PAGESIZE counts system pages: keep those bytes, in the pages
    // chosen for them.
    if (buffer_pages > max_buffer_pages(system_page_size()))
      refuse(kBuffer, buffer_pages, "larger than physical memory", allowed(kBuffer));
    const std::uint64_t bytes = buffer_pages * system_page_size();
    c.page_size = page_size_for_buffer(bytes);
    if (base.read_only_page_size != 0) c.read_only_page_size = read_only_page_size_for_buffer(bytes);
    c.buffer_pages = bytes / c.page_size;
  }
  read_env_into(kFillers, &c.fillers);
  read_env_into(kEvictors, &c.evictors);
  read_env_into(kHighWater, &c.evict_high_water);
  read_env_into(kLowWater, &c.evict_low_water);
  read_env_into(kRetain, &c.evict_retain);
  read_env_into(kReadAhead, &c.read_ahead);
  read_env_into(kReadAheadRun, &c.read_ahead_run);
  read_env_into(kReadAround, &c.read_around);
  read_env_into(kFaultEvents, &c.max_fault_events, kFaultEventsAlias);
  read_env_into(kFaultEvents, &c.max_fault_events);
  read_env_into(kMonitor, &c.monitor_interval);
  read_env_into(kDirectIo, &c.direct_io);
  read_env_into(kKeepWrites, &c.keep_writes);
  read_log_level(&c.log_level);
  read_compression(&c.compression);
  if (const char* eviction = std::getenv(kEvictionEnv)) c.eviction = eviction_from_name(eviction);
  if (const char* huge = std::getenv(kHugePagesEnv); huge != nullptr && *huge != '\0')
    c.huge_pages = huge_pages_from_name(huge);
  c.validate();
  return c;
}

void Config::validate() const {
  const std::size_t sys = system_page_size();
  if (page_size == 0 || page_size % sys != 0 || page_size > kPageSize.max) {
    refuse(kPageSize, page_size, page_size % sys != 0 ? "not a multiple of the system page size" : "out of range",
           allowed(kPageSize));
  }
  check_range(kFillers, fillers);
  check_range(kEvictors, evictors);
  const std::uint64_t max_pages = max_buffer_pages(page_size);
  // Two pages at least: one filler's read slot and one resident page (page_memory.hpp).
  if (buffer_pages < kBuffer.min || buffer_pages > max_pages) {
    refuse(kBuffer, buffer_pages,
           buffer_pages < kBuffer.min ? "smaller than two pages (a filler's read slot and a resident page)"
                                      : "larger than physical memory",
           allowed(kBuffer, page_size));
  }
  check_range(kHighWater, evict_high_water);
  check_range(kLowWater, evict_low_water);
  if (evict_low_water >= evict_high_water) {
    std::ostringstream allowed;
    allowed << "below evict_high_water (UMAP_EVICT_HIGH_WATER_THRESHOLD) = " << evict_high_water;
    refuse(kLowWater, evict_low_water, "not below the high water mark", allowed.str());
  }
  check_range(kRetain, evict_retain);
  if (static_cast<unsigned>(eviction) >= sizeof kEvictionNames / sizeof *kEvictionNames)
    throw ConfigError("eviction (UMAP_EVICTION) out of range; allowed: fifo, hotfifo, s3fifo, clock");
  check_range(kReadAhead, read_ahead);
  if (read_ahead_run < sys || read_ahead_run > kReadAheadRun.max || read_ahead_run % sys != 0) {
    refuse(kReadAheadRun, read_ahead_run,
           read_ahead_run % sys != 0 ? "not a multiple of the system page size" : "out of range",
           allowed(kReadAheadRun));
  }
  if (read_around > kReadAround.max || read_around % sys != 0) {
    refuse(kReadAround, read_around, read_around % sys != 0 ? "not a multiple of the system page size" : "out of range",
           allowed(kReadAround));
  }
  if (read_only_page_size % sys != 0)
    throw ConfigError("read_only_page_size = " + std::to_string(read_only_page_size) +
                      ": not a multiple of the system page size; allowed: 0 (page_size) or such a multiple");
  check_range(kFaultEvents, max_fault_events);
  check_range(kMonitor, monitor_interval);
  if (static_cast<unsigned>(log_level) > static_cast<unsigned>(LogLevel::kDebug))
    throw ConfigError("log_level (UMAP_LOG_LEVEL) out of range; allowed: ERROR, WARNING, INFO, DEBUG");
  if (static_cast<unsigned>(huge_pages) >= sizeof kHugePagesNames / sizeof *kHugePagesNames)
    throw ConfigError("huge_pages (UMAP_HUGE_PAGES) out of range; allowed: off, on, auto");
  if (huge_pages == HugePages::kOn && page_size % kHugePageSize != 0)
    throw ConfigError("huge_pages (UMAP_HUGE_PAGES) = on: page_size (UMAP_PAGESIZE) = " + std::to_string(page_size) +
                      " is not a multiple of the huge page, 2097152 bytes; allowed: off, auto, or a page size of 2 MiB multiples");
  if (huge_pages == HugePages::kOn && keep_writes)
    throw ConfigError("huge_pages (UMAP_HUGE_PAGES) = on cannot keep writes through the process's death "
                      "(keep_writes, UMAP_KEEP_WRITES = 1); allowed: one of them");
}

std::vector<ParameterLimits> parameter_limits() {
  std::vector<ParameterLimits> limits;
  for (const Parameter* p : kParameters) {
    ParameterLimits entry{p->name, p->env, p->min, p->max, p->unit, p->zero_turns_off};
    if (p == &kPageSize || p == &kReadAheadRun) entry.min = system_page_size();
    if (p == &kBuffer) entry.max = max_buffer_pages(system_page_size());
    limits.push_back(entry);
  }
  return limits;
}

std::string Config::to_string() const {
  std::ostringstream out;
  out << "{\"page_size\": " << page_size << ", \"read_only_page_size\": " << read_only_page_size << ", \"fillers\": " << fillers << ", \"evictors\": " << evictors
      << ", \"buffer_pages\": " << buffer_pages << ", \"buffer_size\": " << buffer_bytes()
      << ", \"evict_high_water\": " << evict_high_water << ", \"evict_low_water\": " << evict_low_water
      << ", \"evict_retain\": " << evict_retain << ", \"eviction\": \"" << eviction_name(eviction) << "\""
      << ", \"read_ahead\": " << read_ahead << ", \"read_ahead_run\": " << read_ahead_run
      << ", \"read_around\": " << read_around
      << ", \"max_fault_events\": " << max_fault_events << ", \"direct_io\": " << (direct_io ? 1 : 0)
      << ", \"keep_writes\": " << (keep_writes ? 1 : 0)
      << ", \"monitor_interval\": " << monitor_interval << ", \"log_level\": \"" << log_level_name(log_level)
      << "\", \"compression\": \"" << compression_name(compression) << "\""
      << ", \"huge_pages\": \"" << huge_pages_name(huge_pages) << "\"}";
  return out.str();
}

}  // namespace autopager
