// db_bench's read benchmarks (readseq, readrandom, readreverse) over the kv records, as the kv and lmdb
// workloads run them: their options, what the readers saw, and the result line.
#pragma once

#include <cstdint>
#include <string>

#include "keys.hpp"
#include "kv_file.hpp"
#include "options.hpp"
#include "workload.hpp"

namespace workloads {

struct DbBench {
  std::string benchmark;    // readseq, readrandom or readreverse
  std::uint64_t size_mib = 0;
  KvLayout layout;
  std::uint64_t operations = 0;  // records read by a scan, or lookups
  double seconds = 0;            // readrandom: look up for this long, as many as fit (0: `operations`)
  std::uint64_t passes = 1;      // readseq, readreverse: whole scans of the records, one after another
  KeyChooser keys = KeyChooser::uniform(1);  // readrandom: the records looked up (--keys)

  bool random() const { return benchmark == "readrandom"; }
  bool reverse() const { return benchmark == "readreverse"; }
};

// What the readers saw: the sum of the values read and the number of wrong records.
struct Tally {
  std::uint64_t value_sum = 0;
  std::uint64_t errors = 0;
  Tally& operator+=(const Tally& other) {
    value_sum += other.value_sum;
    errors += other.errors;
    return *this;
  }
};

void add_db_bench_options(Options& options, const std::string& size_help);
// Throws UsageError naming the bad option.
DbBench read_db_bench_options(const Options& options);
// The result of `operations` reads in `seconds`.
Result db_bench_result(const DbBench& bench, std::uint64_t operations, double seconds, const Tally& tally,
                       const std::string& stats);

}  // namespace workloads
