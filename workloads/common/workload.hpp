// What every workload program shares: the common options (data directory, threads, --mmap,
// --generate), the timer, the result line, and a main() that turns errors into clear messages.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "mapping.hpp"
#include "options.hpp"

namespace workloads {

struct Settings {
  std::string data_dir;
  unsigned threads = 1;
  Backend backend = Backend::pager;
  bool generate_only = false;  // make the data (reusing it when present) and exit
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
// line of stdout (with --generate the body only makes the data and nothing is printed): {"metric": ..., "value": ..., "goal": ..., "mode": "umap"|"mmap", "check": ...,
// "stats": ...}. Returns the exit status: 0, 1 for a failed check or an error, 2 for bad usage.
int workload_main(Options& options, int argc, char** argv, const WorkloadBody& body);

}  // namespace workloads
