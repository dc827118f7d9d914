// kv: the read benchmarks of LMDB's db_bench over a mapped key-value store file: readseq (a cursor from
// the first key to the last), readreverse (from the last to the first) and readrandom (point lookups of
// random keys through the index). Each thread walks its own part of the records, or its share of the
// lookups. Every key and value read is checked. Metric: operations per second.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "datafile.hpp"
#include "db_bench.hpp"
#include "kv_file.hpp"
#include "mapping.hpp"
#include "operations.hpp"
#include "random.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint64_t kQuerySeed = 0xdbbe4c4;

struct Store {
  const char* records;
  const char* index;
  KvLayout layout;

  const char* record(std::uint64_t i) const { return records + i * layout.record_bytes(); }

  // The record holding `key`, or layout.records when absent: a binary search of the index for the last
  // block starting at or before the key, then of that block.
  std::uint64_t find(const char* key) const {
    std::uint64_t low = 0, high = layout.index_entries();
    while (high - low > 1) {
      const std::uint64_t middle = (low + high) / 2;
      if (std::memcmp(index + middle * kKeyBytes, key, kKeyBytes) <= 0) low = middle; else high = middle;
    }
    std::uint64_t first = low * kIndexStride;
    std::uint64_t last = std::min(layout.records, first + kIndexStride);
    while (first < last) {
      const std::uint64_t middle = (first + last) / 2;
      const int order = std::memcmp(record(middle), key, kKeyBytes);
      if (order == 0) return middle;
      if (order < 0) first = middle + 1; else last = middle;
    }
    return layout.records;
  }
};

// Reads record i (key and value) and checks it.
void read_record(const Store& store, std::uint64_t i, Tally& tally) {
  char key[kKeyBytes];
  make_key(i, key);
  const char* record = store.record(i);
  const std::uint64_t sum = value_sum(record + kKeyBytes, store.layout.value_bytes);
  tally.value_sum += sum;
  tally.errors += std::memcmp(record, key, kKeyBytes) != 0 || sum != expected_value_sum(i, store.layout.value_bytes);
}

// readseq and readreverse: the records split into one contiguous part a thread.
Tally scan(const Store& store, bool reverse) {
  std::uint64_t value_sum = 0, errors = 0;
#pragma omp parallel reduction(+ : value_sum, errors)
  {
    const std::uint64_t threads = static_cast<std::uint64_t>(omp_get_num_threads());
    const std::uint64_t me = static_cast<std::uint64_t>(omp_get_thread_num());
    const std::uint64_t begin = store.layout.records * me / threads;
    const std::uint64_t end = store.layout.records * (me + 1) / threads;
    Tally mine;
    for (std::uint64_t k = begin; k < end; ++k) read_record(store, reverse ? end - 1 - (k - begin) : k, mine);
    value_sum += mine.value_sum;
    errors += mine.errors;
  }
  return {value_sum, errors};
}

// readrandom: lookup j searches the key of record keys.key(seed, j) (the same lookups for any thread count).
void lookup(const Store& store, const KeyChooser& keys, std::uint64_t j, Tally& tally) {
  const std::uint64_t wanted = keys.key(kQuerySeed, j);
  char key[kKeyBytes];
  make_key(wanted, key);
  const std::uint64_t found = store.find(key);
  if (found != wanted) {
    ++tally.errors;
    return;
  }
  read_record(store, found, tally);
}

Result run(const Options& options, const Settings& settings) {
  const DbBench bench = read_db_bench_options(options);
  const KvLayout& layout = bench.layout;
  const KvFiles files = kv_files(settings.data_dir, bench.size_mib, layout.value_bytes);
  if (settings.generate_only) {
    generate_kv(files, layout);
    return {};
  }
  if (!kv_is_complete(files, layout)) {
    throw DataError("no complete store of " + std::to_string(bench.size_mib) + " MiB with " +
                    std::to_string(layout.value_bytes) + "-byte values in " + settings.data_dir + " (" + files.data +
                    "); make it with --generate");
  }
  MappedFile data(files.data, /*writable=*/false, settings.backend);
  MappedFile index(files.index, /*writable=*/false, settings.backend);
  const Store store{data.as<const char>(), index.as<const char>(), layout};
  const auto looker = [&] { return [&](std::uint64_t j, Tally& tally) { lookup(store, bench.keys, j, tally); }; };
  Tally tally;
  Stopwatch timer;
  std::uint64_t operations = bench.operations;
  if (bench.random()) operations = run_operations(bench.operations, bench.seconds, tally, looker);
  else
    for (std::uint64_t pass = 0; pass < bench.passes; ++pass) tally += scan(store, bench.reverse());
  const double seconds = timer.seconds();
  return db_bench_result(bench, operations, seconds, tally, pager_statistics_json(settings.backend));
}

}  // namespace

int main(int argc, char** argv) {
  Options options("kv", "db_bench read benchmarks (readseq, readrandom, readreverse) over a mapped key-value file.");
  add_db_bench_options(options, "size of the records in MiB");
  return workload_main(options, argc, argv, run);
}
