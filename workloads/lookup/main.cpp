// lookup: DI-MMAP's lookup micro-benchmarks over mapped data: binary search of a sorted vector of keys
// (--benchmark binsearch) and probes of an open-addressing hash table (--benchmark hash). Lookup j asks
// for the key of entry keys.key(seed, j) (--keys: uniform, or skewed; the same keys for any thread count)
// and checks what it finds. A run makes --lookups of them, or as many as fit in --seconds. Metric: lookups per second.
#include <algorithm>
#include <cstdint>
#include <string>

#include "datafile.hpp"
#include "keys.hpp"
#include "lookup_data.hpp"
#include "mapping.hpp"
#include "operations.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint64_t kQuerySeed = 0x100c0b;

struct Tally {
  std::uint64_t sum = 0;  // of the positions (binsearch) or values (hash) found
  std::uint64_t errors = 0;
  Tally& operator+=(const Tally& other) {
    sum += other.sum;
    errors += other.errors;
    return *this;
  }
};

void binary_search(const std::uint64_t* keys, std::uint64_t entries, const KeyChooser& chooser, std::uint64_t j,
                   Tally& tally) {
  const std::uint64_t entry = chooser.key(kQuerySeed, j);
  const std::uint64_t position = std::lower_bound(keys, keys + entries, key_of(entry)) - keys;
  tally.errors += position != entry;
  tally.sum += position;
}

void hash_probe(const HashSlot* slots, const HashTable& table, const KeyChooser& chooser, std::uint64_t j,
                Tally& tally) {
  const std::uint64_t key = key_of(chooser.key(kQuerySeed, j));
  std::uint64_t slot = home_slot(key, table.capacity);
  for (std::uint64_t probes = 0; slots[slot].key != key && slots[slot].key != 0 && probes < table.capacity; ++probes) {
    slot = (slot + 1) & (table.capacity - 1);
  }
  const bool found = slots[slot].key == key;
  tally.errors += !found || slots[slot].value != value_of(key);
  tally.sum += found ? slots[slot].value : 0;
}

DataError missing(const std::string& path) {
  return DataError("missing or partial data file " + path + "; make it with --generate (same --benchmark and --size-mib)");
}

Result run(const Options& options, const Settings& settings) {
  const std::string benchmark = options.choice("benchmark", {"binsearch", "hash"});
  const std::uint64_t size_mib = options.integer("size-mib", 1, 1ULL << 22);
  const std::uint64_t count = options.integer("lookups", 1);
  const double for_seconds = options.real("seconds", 0, 86400);
  const SortedKeys keys = sorted_keys(settings.data_dir, size_mib);
  const HashTable table = hash_table(settings.data_dir, size_mib);
  const bool binsearch = benchmark == "binsearch";
  const KeyChooser chooser = KeyChooser::from_options(options, binsearch ? keys.entries : table.entries);
  if (settings.generate_only) {
    if (binsearch) generate(keys); else generate(table);
    return {};
  }
  if (binsearch ? !is_complete(keys) : !is_complete(table)) throw missing(binsearch ? keys.path : table.path);

  Result result{"lookups/s", 0, "maximize", "ok", "", ""};
  MappedFile file(binsearch ? keys.path : table.path, /*writable=*/false, settings.backend);
  const auto* sorted = file.as<const std::uint64_t>();
  const auto* slots = file.as<const HashSlot>();
  const auto lookup = [&] {
    return [&](std::uint64_t j, Tally& tally) {
      if (binsearch) binary_search(sorted, keys.entries, chooser, j, tally); else hash_probe(slots, table, chooser, j, tally);
    };
  };
  Tally tally;
  Stopwatch timer;
  const std::uint64_t lookups = run_operations(count, for_seconds, tally, lookup);
  const double seconds = timer.seconds();
  result.stats = pager_statistics_json(settings.backend);
  result.value = lookups / seconds;
  if (tally.errors != 0) result.check = std::to_string(tally.errors) + " of " + std::to_string(lookups) + " lookups wrong";
  // A time-boxed run's count and sum differ from run to run; each of its lookups checked its own answer.
  result.checksum = for_seconds > 0 ? benchmark + " time-boxed, every lookup checked"
                                    : benchmark + " " + std::to_string(lookups) + " found " + std::to_string(tally.sum);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("lookup", "Binary search of a mapped sorted vector, or probes of a mapped hash table.");
  options.add("benchmark", "binsearch", "binsearch or hash");
  options.add("size-mib", "512", "size of the vector or table in MiB");
  options.add("lookups", "100000", "number of lookups");
  options.add("seconds", "0", "look up for this many seconds, as many as fit, instead of --lookups (0: --lookups)");
  add_key_options(options);
  return workload_main(options, argc, argv, run);
}
