// Command line of fault_bench: what to map, how to page it, and how the application touches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bench {

enum class Backend { pager, mmap_private, mmap_shared };
enum class StoreKind { file, memory };
enum class Pattern { random, sequential };
enum class Advice { none, normal, random, sequential };

struct Options {
  Backend backend = Backend::pager;
  StoreKind store = StoreKind::file;
  Pattern pattern = Pattern::random;
  std::string file;            // the data file (file store and kernel mmap)
  std::uint64_t size = 0;      // bytes mapped; 0: the whole file (required for the memory store)
  bool direct = false;         // O_DIRECT file store
  Advice advice = Advice::none;  // madvise on the kernel mapping; none: MADV_RANDOM for random, nothing for sequential
  unsigned threads = 1;        // application threads
  unsigned prefetch = 0;       // pages each thread prefetches ahead in batches (pager prefetch / MADV_WILLNEED)
  double seconds = 5;          // the run stops at this deadline or when every page has been touched
  unsigned seed = 1;

  // Pager configuration; 0 keeps the pager's default.
  std::size_t page_size = 0;
  unsigned fillers = 0;
  unsigned evictors = 0;
  std::uint64_t buffer_mib = 0;
  unsigned read_ahead = 0;     // the exception: 0 reads nothing ahead (the pager's default reads 2)
  unsigned max_fault_events = 0;
  unsigned high_water = 0;
  unsigned low_water = 0;
};

// Throws std::invalid_argument naming the option on a bad or missing value.
Options parse_options(int argc, char** argv);

const char* name(Backend b);
const char* name(StoreKind s);
const char* name(Pattern p);

}  // namespace bench
