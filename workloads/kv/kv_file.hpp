// The key-value store file: records of a 16-byte key and a fixed-size value, sorted by key, plus a
// sparse index holding the key of every 32nd record (the upper level of a B+tree, in miniature).
//
// Record i has key "userkey:" followed by key_number(i) in big-endian bytes (so byte order is numeric
// order), and a value of 8-byte words, word w being value_word(i, w). Both are computable from i, so
// every read can be checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "random.hpp"

namespace workloads {

constexpr std::size_t kKeyBytes = 16;
constexpr std::uint64_t kIndexStride = 32;

struct KvLayout {
  std::uint64_t records = 0;
  std::size_t value_bytes = 0;  // a multiple of 8

  std::size_t record_bytes() const { return kKeyBytes + value_bytes; }
  std::uint64_t index_entries() const { return (records + kIndexStride - 1) / kIndexStride; }
};

struct KvFiles {
  std::string data;   // kv-<size>m-v<value>.data: the records
  std::string index;  // kv-<size>m-v<value>.index: every 32nd key
};

// The most records of `value_bytes` that fit in `size_mib` MiB.
KvLayout kv_layout(std::uint64_t size_mib, std::size_t value_bytes);
KvFiles kv_files(const std::string& data_dir, std::uint64_t size_mib, std::size_t value_bytes);

// Keys grow by 1 to 4 from one record to the next, so a key between two records is absent.
inline std::uint64_t key_number(std::uint64_t record) { return record * 4 + (mix64(record) & 3); }

inline void make_key(std::uint64_t record, char key[kKeyBytes]) {
  std::memcpy(key, "userkey:", 8);
  const std::uint64_t number = key_number(record);
  for (int byte = 0; byte < 8; ++byte) key[8 + byte] = static_cast<char>(number >> (56 - 8 * byte));
}

inline std::uint64_t value_word(std::uint64_t record, std::size_t word) {
  return mix64(record) + word * 0x9e3779b97f4a7c15ULL;
}

// The sum of a value's words, as a reader computes it from the bytes it read.
inline std::uint64_t value_sum(const char* value, std::size_t value_bytes) {
  std::uint64_t sum = 0;
  for (std::size_t offset = 0; offset < value_bytes; offset += 8) {
    std::uint64_t word;
    std::memcpy(&word, value + offset, 8);
    sum += word;
  }
  return sum;
}

// The sum record `record`'s value must have.
std::uint64_t expected_value_sum(std::uint64_t record, std::size_t value_bytes);

bool kv_is_complete(const KvFiles& files, const KvLayout& layout);
// Writes both files unless they are complete.
void generate_kv(const KvFiles& files, const KvLayout& layout);

}  // namespace workloads
