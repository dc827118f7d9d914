// randio: the LRIOT pattern. Threads read (and with --write-percent also write) records chosen at random
// across a mapped file, uniformly (LRIOT's) or skewed (--keys zipf). Record r holds the words record_word(r, w), so every read is checked
// and a write stores the same bytes again (the file stays valid for the next run). With --contents random the
// words are mixed (mix64), so that the file does not compress (compressed stores' worst case). Writes are written
// back before the clock stops. Metric: MB/s of records read and written.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "datafile.hpp"
#include "keys.hpp"
#include "mapping.hpp"
#include "random.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint64_t kRecordSeed = 0x1a107;
constexpr std::uint64_t kWriteSeed = 0x1a108;

struct Contents {
  bool random = false;  // --contents random: every word mixed

  std::uint64_t word(std::uint64_t record, std::uint64_t w) const {
    const std::uint64_t plain = record * 0x9e3779b97f4a7c15ULL + w;
    return random ? mix64(plain) : plain;
  }
  void fill_record(std::uint64_t record, std::uint64_t* words, std::size_t count) const {
    for (std::size_t w = 0; w < count; ++w) words[w] = word(record, w);
  }
  bool record_is_valid(std::uint64_t record, const std::uint64_t* words, std::size_t count) const {
    for (std::size_t w = 0; w < count; ++w) {
      if (words[w] != word(record, w)) return false;
    }
    return true;
  }
};

std::string file_path(const Settings& settings, std::uint64_t size_mib, std::size_t record_bytes, Contents contents) {
  return data_path(settings.data_dir, "randio-" + std::to_string(size_mib) + "m-r" + std::to_string(record_bytes) +
                                          (contents.random ? "-random" : "") + ".dat");
}

void generate(const std::string& path, std::uint64_t bytes, std::size_t record_bytes, Contents contents) {
  if (file_exists(path) && file_size(path) == bytes) {
    std::fprintf(stderr, "reusing %s\n", path.c_str());
    return;
  }
  write_file(path, bytes, [record_bytes, contents](std::uint64_t offset, char* buffer, std::size_t length) {
    // Chunks (8 MiB) hold whole records: record sizes are powers of two up to 1 MiB.
    for (std::size_t at = 0; at < length; at += record_bytes) {
      contents.fill_record((offset + at) / record_bytes, reinterpret_cast<std::uint64_t*>(buffer + at), record_bytes / 8);
    }
  });
}

struct Tally {
  std::uint64_t record_sum = 0;  // sum of the record numbers read
  std::uint64_t writes = 0;
  std::uint64_t errors = 0;
};

Tally random_io(char* base, const KeyChooser& chooser, std::size_t record_bytes, std::uint64_t operations,
                unsigned write_percent, Contents contents) {
  std::uint64_t record_sum = 0, writes = 0, errors = 0;
  const std::size_t words = record_bytes / 8;
#pragma omp parallel reduction(+ : record_sum, writes, errors)
  {
    std::vector<std::uint64_t> buffer(words);
#pragma omp for schedule(dynamic, 64)
    for (std::uint64_t j = 0; j < operations; ++j) {
      const std::uint64_t record = chooser.key(kRecordSeed, j);
      char* where = base + record * record_bytes;
      if (mix64(kWriteSeed + j) % 100 < write_percent) {
        contents.fill_record(record, buffer.data(), words);
        std::memcpy(where, buffer.data(), record_bytes);
        ++writes;
      } else {
        std::memcpy(buffer.data(), where, record_bytes);
        errors += !contents.record_is_valid(record, buffer.data(), words);
        record_sum += record;
      }
    }
  }
  return {record_sum, writes, errors};
}

Result run(const Options& options, const Settings& settings) {
  const std::uint64_t size_mib = options.integer("size-mib", 1, 1ULL << 22);
  const std::size_t record_bytes = options.integer("record-size", 8, 1 << 20);
  if ((record_bytes & (record_bytes - 1)) != 0) throw UsageError("option --record-size must be a power of two");
  const std::uint64_t operations = options.integer("ops", 1);
  const unsigned write_percent = static_cast<unsigned>(options.integer("write-percent", 0, 100));
  const std::uint64_t bytes = size_mib << 20;
  if (bytes < record_bytes) throw UsageError("option --size-mib is smaller than one record");
  const KeyChooser chooser = KeyChooser::from_options(options, bytes / record_bytes);
  const Contents contents{options.choice("contents", {"sequence", "random"}) == "random"};
  const std::string path = file_path(settings, size_mib, record_bytes, contents);
  if (settings.generate_only) {
    generate(path, bytes, record_bytes, contents);
    return {};
  }
  if (!file_exists(path) || file_size(path) != bytes) {
    throw DataError("missing or partial data file " + path + "; make it with --generate (same --size-mib and --record-size)");
  }

  Result result{"MB/s", 0, "maximize", "ok", "", ""};
  MappedFile file(path, /*writable=*/write_percent > 0, settings.backend);
  Stopwatch timer;
  const Tally tally = random_io(file.as<char>(), chooser, record_bytes, operations, write_percent, contents);
  file.flush();
  const double seconds = timer.seconds();
  result.stats = pager_statistics_json(settings.backend);
  result.value = static_cast<double>(operations) * record_bytes / 1e6 / seconds;
  if (tally.errors != 0) result.check = std::to_string(tally.errors) + " records read wrong";
  result.checksum = std::to_string(operations - tally.writes) + " reads " + std::to_string(tally.writes) +
                    " writes records " + std::to_string(tally.record_sum);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("randio", "LRIOT random I/O: threads reading (and writing) random records of a mapped file.");
  options.add("size-mib", "1024", "file size in MiB");
  options.add("record-size", "4096", "bytes a record (a power of two)");
  options.add("ops", "100000", "number of record reads and writes");
  options.add("write-percent", "0", "percentage of operations that write their record");
  options.add("contents", "sequence", "what records hold: sequence (compressible) or random (incompressible words)");
  add_key_options(options);
  return workload_main(options, argc, argv, run);
}
