#include "kv_file.hpp"

#include <cstdio>

#include "datafile.hpp"

namespace workloads {

KvLayout kv_layout(std::uint64_t size_mib, std::size_t value_bytes) {
  KvLayout layout;
  layout.value_bytes = value_bytes;
  layout.records = (size_mib << 20) / layout.record_bytes();
  return layout;
}

KvFiles kv_files(const std::string& data_dir, std::uint64_t size_mib, std::size_t value_bytes) {
  const std::string stem = data_path(data_dir, "kv-" + std::to_string(size_mib) + "m-v" + std::to_string(value_bytes));
  return {stem + ".data", stem + ".index"};
}

std::uint64_t expected_value_sum(std::uint64_t record, std::size_t value_bytes) {
  std::uint64_t sum = 0;
  for (std::size_t word = 0; word < value_bytes / 8; ++word) sum += value_word(record, word);
  return sum;
}

bool kv_is_complete(const KvFiles& files, const KvLayout& layout) {
  return file_exists(files.data) && file_exists(files.index) &&
         file_size(files.data) == layout.records * layout.record_bytes() &&
         file_size(files.index) == layout.index_entries() * kKeyBytes;
}

void generate_kv(const KvFiles& files, const KvLayout& layout) {
  if (kv_is_complete(files, layout)) {
    std::fprintf(stderr, "reusing the store in %s\n", files.data.c_str());
    return;
  }
  const std::size_t record_bytes = layout.record_bytes();
  write_file(files.data, layout.records * record_bytes, [&](std::uint64_t offset, char* buffer, std::size_t length) {
    // Chunks need not start on a record: build each record touching the chunk and copy its overlap.
    std::uint64_t record = offset / record_bytes;
    char bytes[kKeyBytes + 4096];
    for (std::uint64_t at = record * record_bytes; at < offset + length; at += record_bytes, ++record) {
      make_key(record, bytes);
      for (std::size_t word = 0; word < layout.value_bytes / 8; ++word) {
        const std::uint64_t value = value_word(record, word);
        std::memcpy(bytes + kKeyBytes + 8 * word, &value, 8);
      }
      const std::uint64_t from = std::max(at, offset), to = std::min(at + record_bytes, offset + length);
      std::memcpy(buffer + (from - offset), bytes + (from - at), to - from);
    }
  });
  write_file(files.index, layout.index_entries() * kKeyBytes, [](std::uint64_t offset, char* buffer, std::size_t length) {
    for (std::size_t at = 0; at < length; at += kKeyBytes) make_key((offset + at) / kKeyBytes * kIndexStride, buffer + at);
  });
}

}  // namespace workloads
