// stream: STREAM's copy, scale, add and triad over three arrays of doubles in one mapped file, larger
// than the pager's buffer. The kernels overwrite the arrays, so every run writes the initial values
// (a = 1, b = 2, c = 0) afresh before the clock starts; the results are written back before it stops.
// The elements are then checked against the same kernels applied to scalars: a sample of them always, all
// of them in full validation. The checksum hashes the sample. Metric: GB/s.
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

#include "datafile.hpp"
#include "mapping.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr double kScalar = 3.0;
constexpr double kInitial[3] = {1.0, 2.0, 0.0};
constexpr std::uint64_t kSampledElements = 4096;
// Bytes STREAM counts for one pass of copy, scale, add and triad, per element: 2 + 2 + 3 + 3 arrays.
constexpr double kBytesPerElement = 10 * sizeof(double);

struct Arrays {
  double* a;
  double* b;
  double* c;
  std::uint64_t length;
};

// One STREAM pass; also applied to one-element "arrays" to know what every element must hold.
void stream_pass(const Arrays& x) {
  const std::int64_t n = static_cast<std::int64_t>(x.length);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) x.c[i] = x.a[i];
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) x.b[i] = kScalar * x.c[i];
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) x.c[i] = x.a[i] + x.b[i];
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) x.a[i] = x.b[i] + kScalar * x.c[i];
}

void write_initial_arrays(const std::string& path, std::uint64_t length) {
  rewrite_file(path, 3 * length * sizeof(double), [length](std::uint64_t offset, char* buffer, std::size_t bytes) {
    auto* values = reinterpret_cast<double*>(buffer);
    const std::uint64_t first = offset / sizeof(double);
    for (std::size_t i = 0; i < bytes / sizeof(double); ++i) values[i] = kInitial[(first + i) / length];
  });
}

// The number of elements differing from what `expected` says array a, b, c must hold.
std::uint64_t count_wrong(const std::string& path, std::uint64_t length, const double expected[3]) {
  std::uint64_t wrong = 0;
  read_file(path, [&](std::uint64_t offset, const char* data, std::size_t bytes) {
    const auto* values = reinterpret_cast<const double*>(data);
    const std::uint64_t first = offset / sizeof(double);
    for (std::size_t i = 0; i < bytes / sizeof(double); ++i) wrong += values[i] != expected[(first + i) / length];
  });
  return wrong;
}

Result run(const Options& options, const Settings& settings) {
  const std::uint64_t size_mib = options.integer("size-mib", 1, 1ULL << 22);
  const std::uint64_t iterations = options.integer("iterations", 1, 1000);
  const std::uint64_t length = (size_mib << 20) / (3 * sizeof(double));
  const std::string path = data_path(settings.data_dir, "stream-" + std::to_string(size_mib) + "m.f64");
  write_initial_arrays(path, length);
  if (settings.generate_only) return {};

  Result result{"GB/s", 0, "maximize", "ok", "", ""};
  {
    MappedFile file(path, /*writable=*/true, settings.backend);
    double* base = file.as<double>();
    const Arrays arrays{base, base + length, base + 2 * length, length};
    Stopwatch timer;
    for (std::uint64_t k = 0; k < iterations; ++k) stream_pass(arrays);
    file.flush();
    const double seconds = timer.seconds();
    result.stats = pager_statistics_json(settings.backend);
    result.value = iterations * kBytesPerElement * length / 1e9 / seconds;
    file.close();
  }
  double expected[3] = {kInitial[0], kInitial[1], kInitial[2]};
  for (std::uint64_t k = 0; k < iterations; ++k) stream_pass({&expected[0], &expected[1], &expected[2], 1});
  std::uint64_t sampled_wrong = 0;
  const std::uint64_t sample = read_sampled_words(path, kSampledElements, [&](std::uint64_t index, std::uint64_t word) {
    double value;
    std::memcpy(&value, &word, sizeof value);
    sampled_wrong += value != expected[index / length];
  });
  result.validation = settings.validation;
  if (settings.validation == Validation::full) {
    const std::uint64_t wrong = count_wrong(path, length, expected);
    if (wrong != 0) result.check = std::to_string(wrong) + " elements wrong";
  } else if (sampled_wrong != 0) {
    result.check = std::to_string(sampled_wrong) + " of the sampled elements wrong";
  }
  std::ostringstream summary;
  summary << iterations << " passes over 3 x " << length << " doubles: a=" << expected[0] << " b=" << expected[1]
          << " c=" << expected[2] << ", sample " << std::hex << sample;
  result.checksum = summary.str();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("stream", "STREAM copy, scale, add and triad over three arrays in a mapped file.");
  options.add("size-mib", "768", "total size of the three arrays in MiB");
  options.add("iterations", "2", "passes of the four kernels");
  return workload_main(options, argc, argv, run);
}
