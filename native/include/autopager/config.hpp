// Paging parameters (AutoPager Table I): defaults, then UMAP_* environment variables, then the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autopager/store.hpp"

namespace autopager {

// A refused configuration; what() names the parameter (and its environment variable) and the allowed range.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Which messages the pager prints on stderr (UMAP_LOG_LEVEL, UMap's names): each level adds to the ones before.
enum class LogLevel : unsigned {
  kError = 0,    // what failed (a read, a write-back)
  kWarning = 1,  // the default: also what the pager changed or refused on its own
  kInfo = 2,     // also each pager started and stopped, each region mapped and unmapped
  kDebug = 3,    // also flushes and pinning
};

// Which resident page goes when the buffer is full (UMAP_EVICTION; native/src/policy/, docs/DESIGN.md "Eviction
// policies"): what each keeps and the signal it keeps it by.
enum class Eviction : unsigned {
  kFifo = 0,     // fill order
  kHotFifo = 1,  // DI-MMAP's hot-page FIFO: pages faulted again get a protected share
  kS3Fifo = 2,   // S3-FIFO: a small probationary FIFO, a main FIFO, a ghost queue of recently evicted pages
  kClock = 3,    // CLOCK: a second chance for pages referenced since the hand passed (refaults, first writes)
};

// Whether regions' page memory comes from 2 MiB huge pages (UMAP_HUGE_PAGES; huge_pages.hpp, docs/DESIGN.md
// "Huge pages").
enum class HugePages : unsigned {
  kOff = 0,   // the system's pages
  kOn = 1,    // huge pages, or the pager refuses to start (page size, pool, kernel)
  kAuto = 2,  // huge pages where the page size is a multiple of 2 MiB and the pool and the kernel allow, else off
};

// The huge page that huge_pages maps regions with (MAP_HUGE_2MB).
inline constexpr std::size_t kHugePageSize = std::size_t{2} << 20;

struct Config {
  std::size_t page_size = 0;        // the unit of residency and dirtiness of writable regions, and of every region
                                    // when read_only_page_size is 0; a multiple of the system page
                                    // (page_size_for_buffer when none is given)
  std::size_t read_only_page_size = 0;  // the page of read-only regions, at most page_size; 0: page_size.
                                        // defaults(): the system page (read_only_page_size_for_buffer), which
                                        // reads grow from (read_around, read-ahead runs); a page size given
                                        // (UMAP_PAGESIZE) sets it to 0
  unsigned fillers = 0;             // threads reading pages from stores; defaults(): twice the hardware threads
  unsigned evictors = 0;            // threads writing back and evicting; defaults(): half the hardware threads, ≥ 1
  std::uint64_t buffer_pages = 0;   // most pages (of page_size) resident at once, over all regions
  unsigned evict_high_water = 90;   // % of the buffer at which eviction starts
  unsigned evict_low_water = 70;    // % at which it stops; < evict_high_water
  unsigned evict_retain = 0;        // % of the buffer kept by the first pages filled, evicted only when no
                                    // other page is left (policy/eviction_policy.hpp); 0: none
  Eviction eviction = Eviction::kFifo;  // the policy for the pages not retained
  unsigned read_ahead = 0;          // reads kept in flight along a sequential stream (read_ahead.hpp); defaults(): 2
  std::size_t read_ahead_run = std::size_t{1} << 20;  // most bytes one read-ahead read covers (whole pages of
                                                      // page_size; at most a quarter of a filler's read slots)
  std::size_t read_around = 0;      // most bytes read around a fault that starts no stream (read_around.hpp); 0:
                                    // the page alone; defaults(): 4 MiB
  unsigned max_fault_events = 0;    // fault events read from the kernel per call; defaults(): hardware threads
  bool direct_io = false;           // file stores made by umap(), the preload and memmap use O_DIRECT where the
                                    // file system allows; defaults(): true
  bool keep_writes = false;         // writable regions of files keep their dirty pages in shared memory that a
                                    // keeper process writes back if the process dies (kept_memory.hpp);
                                    // defaults(): true
  unsigned monitor_interval = 0;    // seconds between statistics lines on stderr; 0: none
  LogLevel log_level = LogLevel::kWarning;
  Compression compression = Compression::none;  // pages of NBD stores the front ends open, per page of
                                                // page_size (make_compressed_store); UMAP_COMPRESSION
  HugePages huge_pages = HugePages::kOff;  // regions' page memory in 2 MiB huge pages (huge_pages.hpp)

  // A buffer of 80% of the memory this process can still use (available memory, bounded by its memory
  // cgroup's limit less the cgroup's usage) in pages of page_size_for_buffer(those bytes); the threads,
  // read-ahead and direct I/O noted at each field; watermarks 90/70.
  static Config defaults();
  // `base` overridden by every UMAP_* variable that is set. As in UMap, a variable set to 0 keeps
  // `base`'s value, except UMAP_READ_AHEAD, UMAP_DIRECT_IO, UMAP_EVICT_RETAIN and UMAP_KEEP_WRITES, which 0 turns off. The buffer: UMAP_BUFSIZE
  // pages of UMAP_PAGESIZE when both are set; base's buffer bytes in pages of UMAP_PAGESIZE when only that
  // is set; UMAP_BUFSIZE system pages (UMap's unit when it has no page size) in pages of
  // page_size_for_buffer(those bytes) when only UMAP_BUFSIZE is set.
  // Throws ConfigError on a bad value.
  static Config from_environment(const Config& base = defaults());
  // Throws ConfigError when a value is out of range or inconsistent.
  void validate() const;

  std::size_t buffer_bytes() const { return static_cast<std::size_t>(buffer_pages) * page_size; }
  // The page of a region: read-only ones take read_only_page_size where it is set (and smaller).
  std::size_t page_size_for(bool writable) const {
    return writable || read_only_page_size == 0 || read_only_page_size > page_size ? page_size : read_only_page_size;
  }
  std::string to_string() const;
};

std::size_t system_page_size();
// The page size of writable regions when none is given (UMAP_PAGESIZE, page_size=): the buffer / 1024 within
// [system page, 1 MiB]. A writer of small pages takes a write-protect fault for each page it writes after reading
// it, which large pages spare sequential writers (a sort, STREAM).
std::size_t page_size_for_buffer(std::uint64_t buffer_bytes);
// The page size of read-only regions when none is given: the system page, so that an isolated fault reads no more
// than it needs while reads grow around clustered faults (read_around.hpp) and along streams (read_ahead.hpp);
// doubled while the buffer would hold more than 4 Mi pages (16 GiB of 4 KiB pages), which bounds the policy's
// per-page bookkeeping.
std::size_t read_only_page_size_for_buffer(std::uint64_t buffer_bytes);
const char* log_level_name(LogLevel level);

const char* huge_pages_name(HugePages huge_pages);
// off, on or auto (any case; or 0, 1, 2); throws ConfigError naming UMAP_HUGE_PAGES otherwise.
HugePages huge_pages_from_name(const std::string& name);

const char* eviction_name(Eviction eviction);
// The policy named (fifo, hotfifo, s3fifo, clock; any case); throws ConfigError naming UMAP_EVICTION otherwise.
Eviction eviction_from_name(const std::string& name);

// One numeric parameter's limits as Config::validate checks them (autopager/parameters.py holds the same table; the
// categorical ones, eviction and compression, are checked by name).
struct ParameterLimits {
  std::string name;  // as the tuner and the Python API name it
  std::string env;   // its UMAP_* variable
  std::uint64_t min;
  std::uint64_t max;
  std::string unit;     // of its variable's value: "bytes", "pages", "percent", "seconds" or ""
  bool zero_turns_off;  // the variable set to 0 turns it off; otherwise 0 leaves it as it was
};
// Every numeric parameter's limits. Beyond them: page_size and read_ahead_run are multiples of the system page;
// buffer_size's max is for pages of the system page (physical memory), its pages are of page_size;
// evict_low_water is below evict_high_water.
std::vector<ParameterLimits> parameter_limits();
unsigned hardware_threads();

}  // namespace autopager
