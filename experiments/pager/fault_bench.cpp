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

// The whole process's faults and CPU time: the application's threads and the pager's.
struct ProcessUsage {
  std::uint64_t major_faults = 0;
  std::uint64_t minor_faults = 0;
  std::uint64_t context_switches = 0;  // voluntary and involuntary
  double user_s = 0;
  double system_s = 0;
};

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

ProcessUsage process_usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<std::uint64_t>(u.ru_majflt), static_cast<std::uint64_t>(u.ru_minflt),
          static_cast<std::uint64_t>(u.ru_nvcsw + u.ru_nivcsw), seconds_of(u.ru_utime), seconds_of(u.ru_stime)};
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace bench;
  const Options o = parse_options(argc, argv);
  auto mapping = o.backend == Backend::pager ? make_pager_mapping(o) : make_kernel_mapping(o);

  const ProcessUsage before = process_usage();
  const AccessResult r = run_access(*mapping, o);
  const ProcessUsage after = process_usage();

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
      .add("touch_p50_us", r.p50_us)
      .add("touch_p99_us", r.p99_us)
      .add("major_faults", after.major_faults - before.major_faults)
      .add("minor_faults", after.minor_faults - before.minor_faults)
      .add("switches_per_page", r.pages ? static_cast<double>(after.context_switches - before.context_switches) /
                                              static_cast<double>(r.pages)
                                        : 0.0)
      .add("cpu_user_s", after.user_s - before.user_s)
      .add("cpu_system_s", after.system_s - before.system_s)
      .add("cpu_us_per_page", r.pages ? (after.user_s + after.system_s - before.user_s - before.system_s) * 1e6 /
                                            static_cast<double>(r.pages)
                                      : 0.0)
      .add("checksum", r.checksum);
  std::printf("%s\n", out.str().c_str());
  std::fflush(stdout);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fault_bench: %s\n", e.what());
  return 1;
}
