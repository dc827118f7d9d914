#include "lookup_data.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include "datafile.hpp"

namespace workloads {

SortedKeys sorted_keys(const std::string& data_dir, std::uint64_t size_mib) {
  return {data_path(data_dir, "lookup-sorted-" + std::to_string(size_mib) + "m.u64"), (size_mib << 20) / sizeof(std::uint64_t)};
}

HashTable hash_table(const std::string& data_dir, std::uint64_t size_mib) {
  std::uint64_t capacity = 1;
  while (capacity * 2 * sizeof(HashSlot) <= (size_mib << 20)) capacity *= 2;
  return {data_path(data_dir, "lookup-hash-" + std::to_string(size_mib) + "m.tbl"), capacity, capacity / 2};
}

bool is_complete(const SortedKeys& keys) {
  return file_exists(keys.path) && file_size(keys.path) == keys.entries * sizeof(std::uint64_t);
}

bool is_complete(const HashTable& table) {
  return file_exists(table.path) && file_size(table.path) == table.capacity * sizeof(HashSlot);
}

void generate(const SortedKeys& keys) {
  if (is_complete(keys)) {
    std::fprintf(stderr, "reusing %s\n", keys.path.c_str());
    return;
  }
  write_file(keys.path, keys.entries * sizeof(std::uint64_t), [](std::uint64_t offset, char* buffer, std::size_t length) {
    auto* values = reinterpret_cast<std::uint64_t*>(buffer);
    for (std::size_t i = 0; i < length / sizeof(std::uint64_t); ++i) values[i] = key_of(offset / sizeof(std::uint64_t) + i);
  });
}

void generate(const HashTable& table) {
  if (is_complete(table)) {
    std::fprintf(stderr, "reusing %s\n", table.path.c_str());
    return;
  }
  std::vector<HashSlot> slots(table.capacity, HashSlot{0, 0});
  for (std::uint64_t entry = 0; entry < table.entries; ++entry) {
    const std::uint64_t key = key_of(entry);
    std::uint64_t slot = home_slot(key, table.capacity);
    while (slots[slot].key != 0) slot = (slot + 1) & (table.capacity - 1);
    slots[slot] = {key, value_of(key)};
  }
  const char* bytes = reinterpret_cast<const char*>(slots.data());
  write_file(table.path, table.capacity * sizeof(HashSlot), [bytes](std::uint64_t offset, char* buffer, std::size_t length) {
    std::memcpy(buffer, bytes + offset, length);
  });
}

}  // namespace workloads
