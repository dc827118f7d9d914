// The data of the lookup micro-benchmarks (DI-MMAP section 5.2): a sorted vector of 64-bit keys, and an
// open-addressing hash table (linear probing, half full) of 16-byte slots {key, value}.
//
// Entry i has key key_of(i) (strictly increasing, never 0, which marks an empty slot) and, in the
// table, value value_of(key), so every lookup can be checked.
#pragma once

#include <cstdint>
#include <string>

#include "random.hpp"

namespace workloads {

inline std::uint64_t key_of(std::uint64_t entry) { return entry * 16 + 1 + mix64(entry) % 15; }
inline std::uint64_t value_of(std::uint64_t key) { return mix64(key ^ 0x7ab1e); }
inline std::uint64_t home_slot(std::uint64_t key, std::uint64_t capacity) { return mix64(key) & (capacity - 1); }

struct HashSlot {
  std::uint64_t key;  // 0: empty
  std::uint64_t value;
};

// The sorted vector: `size_mib` MiB of keys.
struct SortedKeys {
  std::string path;
  std::uint64_t entries;
};
SortedKeys sorted_keys(const std::string& data_dir, std::uint64_t size_mib);

// The table: the largest power-of-two number of slots within `size_mib` MiB, holding half as many keys.
struct HashTable {
  std::string path;
  std::uint64_t capacity;
  std::uint64_t entries;
};
HashTable hash_table(const std::string& data_dir, std::uint64_t size_mib);

bool is_complete(const SortedKeys& keys);
bool is_complete(const HashTable& table);
// Write the file unless it is complete.
void generate(const SortedKeys& keys);
void generate(const HashTable& table);

}  // namespace workloads
