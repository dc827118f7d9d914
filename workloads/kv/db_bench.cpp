#include "db_bench.hpp"

namespace workloads {

void add_db_bench_options(Options& options, const std::string& size_help) {
  options.add("benchmark", "readrandom", "readseq, readrandom or readreverse");
  options.add("size-mib", "512", size_help);
  options.add("value-size", "128", "bytes a value (a multiple of 8, at most 4096)");
  options.add("lookups", "100000", "number of lookups of readrandom");
  options.add("seconds", "0", "readrandom: look up for this many seconds, as many as fit, instead of --lookups (0: --lookups)");
  options.add("passes", "1", "readseq, readreverse: scan every record this many times, one scan after another");
  add_key_options(options);
}

DbBench read_db_bench_options(const Options& options) {
  DbBench bench;
  bench.benchmark = options.choice("benchmark", {"readseq", "readrandom", "readreverse"});
  bench.size_mib = options.integer("size-mib", 1, 1ULL << 22);
  const std::size_t value_bytes = options.integer("value-size", 8, 4096);
  if (value_bytes % 8 != 0) throw UsageError("option --value-size must be a multiple of 8");
  bench.layout = kv_layout(bench.size_mib, value_bytes);
  if (bench.layout.records == 0) throw UsageError("option --size-mib is too small for one record");
  bench.passes = options.integer("passes", 1, 1000000);
  bench.operations = bench.random() ? options.integer("lookups", 1) : bench.layout.records * bench.passes;
  bench.seconds = options.real("seconds", 0, 86400);
  if (bench.seconds > 0 && !bench.random()) throw UsageError("option --seconds is for readrandom; a scan reads every record");
  if (bench.passes > 1 && bench.random()) throw UsageError("option --passes is for readseq and readreverse");
  if (options.text("keys") != "uniform" && !bench.random()) throw UsageError("option --keys is for readrandom");
  bench.keys = KeyChooser::from_options(options, bench.layout.records);
  return bench;
}

Result db_bench_result(const DbBench& bench, std::uint64_t operations, double seconds, const Tally& tally,
                       const std::string& stats) {
  Result result{"ops/s", operations / seconds, "maximize", "ok", "", stats};
  if (tally.errors != 0) result.check = std::to_string(tally.errors) + " of " + std::to_string(operations) + " reads wrong";
  // A time-boxed run's count and sum differ from run to run; each of its reads checked its own record.
  result.checksum = bench.seconds > 0 ? bench.benchmark + " time-boxed, every read checked"
                                      : bench.benchmark + " " + std::to_string(operations) + " values " +
                                            std::to_string(tally.value_sum);
  return result;
}

}  // namespace workloads
