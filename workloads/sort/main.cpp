// sort: the umapsort pattern. A file of 64-bit integers in descending order is sorted ascending in place
// through the mapping by a parallel quicksort, then checked (element i must be i): a sample of the elements
// always, all of them in full validation. The checksum hashes the sample. The sort consumes its input, so
// every run writes it afresh before the timed sort. Metric: seconds of sort plus write-back.
#include <cstdint>
#include <sstream>
#include <string>

#include "datafile.hpp"
#include "mapping.hpp"
#include "parallel_quicksort.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint64_t kSampledElements = 4096;

std::string input_path(const Settings& settings, std::uint64_t size_mib) {
  return data_path(settings.data_dir, "sort-" + std::to_string(size_mib) + "m.u64");
}

// n-1, n-2, ..., 0.
void write_descending(const std::string& path, std::uint64_t count) {
  rewrite_file(path, count * sizeof(std::uint64_t), [count](std::uint64_t offset, char* buffer, std::size_t length) {
    auto* values = reinterpret_cast<std::uint64_t*>(buffer);
    const std::uint64_t first = offset / sizeof(std::uint64_t);
    for (std::size_t i = 0; i < length / sizeof(std::uint64_t); ++i) values[i] = count - 1 - (first + i);
  });
}

std::string misplaced(std::uint64_t index, std::uint64_t value) {
  return "element " + std::to_string(index) + " is " + std::to_string(value);
}

// Empty when element i is i for every i, else the first misplaced element.
std::string check_ascending(const std::string& path) {
  std::string problem;
  read_file(path, [&problem](std::uint64_t offset, const char* data, std::size_t length) {
    const auto* values = reinterpret_cast<const std::uint64_t*>(data);
    const std::uint64_t first = offset / sizeof(std::uint64_t);
    for (std::size_t i = 0; i < length / sizeof(std::uint64_t) && problem.empty(); ++i) {
      if (values[i] != first + i) problem = misplaced(first + i, values[i]);
    }
  });
  return problem;
}

Result run(const Options& options, const Settings& settings) {
  const std::uint64_t size_mib = options.integer("size-mib", 1, 1ULL << 22);
  const std::uint64_t count = (size_mib << 20) / sizeof(std::uint64_t);
  const std::string path = input_path(settings, size_mib);
  write_descending(path, count);
  if (settings.generate_only) return {};

  Result result{"seconds", 0, "minimize", "ok", "", ""};
  {
    MappedFile file(path, /*writable=*/true, settings.backend);
    Stopwatch timer;
    parallel_quicksort(file.as<std::uint64_t>(), count);
    file.flush();
    result.value = timer.seconds();
    result.stats = pager_statistics_json(settings.backend);
    file.close();
  }
  std::string problem;
  const std::uint64_t sample = read_sampled_words(path, kSampledElements, [&](std::uint64_t i, std::uint64_t value) {
    if (value != i && problem.empty()) problem = misplaced(i, value);
  });
  result.validation = settings.validation;
  if (settings.validation == Validation::full) problem = check_ascending(path);
  if (!problem.empty()) result.check = "not sorted: " + problem;
  std::ostringstream checksum;
  checksum << count << " sorted, sample " << std::hex << sample;
  result.checksum = checksum.str();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("sort", "Sorts a descending array of 64-bit integers ascending, in place, in a mapped file.");
  options.add("size-mib", "1024", "array size in MiB");
  return workload_main(options, argc, argv, run);
}
