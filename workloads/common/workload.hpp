// What every workload program shares: the common options (data directory, threads, --mmap,
// --generate), the timer, the result line, and a main() that turns errors into clear messages.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "mapping.hpp"
#include "options.hpp"

namespace workloads {

// What a workload checks of its answer after the timed part, as AUTOPAGER_VALIDATE asks: everything (full,
// the default), or only what is cheap (checksum: no re-reading of the whole data). The checksum is the same
// in both modes, so a run in checksum mode is checked by comparing its checksum with a full run's.
enum class Validation { full, checksum };

struct Settings {
  std::string data_dir;
  unsigned threads = 1;
  Backend backend = Backend::pager;
  bool generate_only = false;  // make the data (reusing it when present) and exit
  Validation validation = Validation::full;
};

// The result of the timed kernel.
struct Result {
  std::string metric;    // "seconds", "ops/s", "MB/s", "GB/s", "lookups/s"
  double value = 0;
  std::string goal;      // "minimize" or "maximize"
  std::string check;     // "ok", or what is wrong with the answer
  std::string checksum;  // a summary of the answer, equal on the pager and on mmap
  std::string stats;     // pager_statistics_json() taken right after the kernel
  std::string mode = "";  // what served the mappings, when not the backend ("umap" or "mmap") itself
  Validation validation = Validation::full;  // the checks run: checksum where an expensive one was skipped
};

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

using WorkloadBody = std::function<Result(const Options&, const Settings&)>;

// Declares the common options on `options`, parses argv, runs `body` and prints its result as the last
// line of stdout (with --generate the body only makes the data and nothing is printed): {"metric": ..., "value": ...,
// "goal": ..., "mode": "umap"|"mmap", "check": ..., "validation": "full"|"checksum", ..., "stats": ...}. Returns the
// exit status: 0, 1 for a failed check or an error, 2 for bad usage.
int workload_main(Options& options, int argc, char** argv, const WorkloadBody& body);

}  // namespace workloads
