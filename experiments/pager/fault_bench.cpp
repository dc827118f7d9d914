// fault_bench: page faults served by autopager (file or memory store) or by the kernel's mmap of the
// same file, under random 4 KiB touches or a sequential scan. Prints one JSON line per run:
// the configuration, pages/s, MB/s, microseconds per page, and the backend's counters.
//
// Run `fault_bench --help` for the options; experiments/bench_pager.py drives it.

#include <sys/resource.h>

#include <cstdio>
#include <exception>

#include "access.hpp"
#include "json_line.hpp"
#include "mapping.hpp"
#include "options.hpp"

namespace {

struct FaultCounts {
  std::uint64_t major = 0;
  std::uint64_t minor = 0;
};

FaultCounts process_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<std::uint64_t>(u.ru_majflt), static_cast<std::uint64_t>(u.ru_minflt)};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace bench;
  const Options o = parse_options(argc, argv);
  auto mapping = o.backend == Backend::pager ? make_pager_mapping(o) : make_kernel_mapping(o);

  const FaultCounts before = process_faults();
  const AccessResult r = run_access(*mapping, o);
  const FaultCounts after = process_faults();

  JsonLine out;
  out.add("bench", "fault_bench")
      .add("backend", name(o.backend))
      .add("store", name(o.store))
      .add("pattern", name(o.pattern))
      .add("direct", o.direct)
      .add("threads", o.threads)
      .add("prefetch", o.prefetch)
      .add("length", static_cast<std::uint64_t>(mapping->length()));
  mapping->describe(out);
  out.add("seconds", r.seconds)
      .add("pages", r.pages)
      .add("bytes", r.bytes)
      .add("pages_per_s", static_cast<double>(r.pages) / r.seconds)
      .add("mb_per_s", static_cast<double>(r.bytes) / r.seconds / 1e6)
      .add("us_per_page", r.pages ? r.seconds * 1e6 / static_cast<double>(r.pages) : 0.0)
      .add("major_faults", after.major - before.major)
      .add("minor_faults", after.minor - before.minor)
      .add("checksum", r.checksum);
  std::printf("%s\n", out.str().c_str());
  std::fflush(stdout);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fault_bench: %s\n", e.what());
  return 1;
}
