#include "workload.hpp"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "datafile.hpp"

namespace workloads {

namespace {

void add_common_options(Options& options) {
  options.add("data-dir", "data", "directory holding the generated data (made if missing)");
  options.add("threads", std::to_string(std::max(1u, std::thread::hardware_concurrency())), "worker threads");
  options.add_flag("mmap", "run on the kernel's mmap instead of the pager");
  options.add_flag("generate", "only make the data (reused when already there) and exit");
  options.add("nbd", "", "serve the data from this NBD export (nbd://host:port/export, nbd+unix:///?socket=PATH): "
              "copied onto it before mapping, back after (UMAP_COMPRESSION applies)");
}

Validation read_validation() {
  const char* text = std::getenv("AUTOPAGER_VALIDATE");
  const std::string value = text == nullptr ? "" : text;
  if (value.empty() || value == "full") return Validation::full;
  if (value == "checksum") return Validation::checksum;
  throw UsageError("AUTOPAGER_VALIDATE must be full or checksum, not '" + value + "'");
}

Settings read_common_options(const Options& options) {
  Settings settings;
  settings.data_dir = options.text("data-dir");
  if (settings.data_dir.empty()) throw UsageError("option --data-dir must not be empty");
  settings.threads = static_cast<unsigned>(options.integer("threads", 1, 1024));
  settings.backend = options.flag("mmap") ? Backend::kernel : Backend::pager;
  settings.generate_only = options.flag("generate");
  settings.validation = read_validation();
  const std::string nbd = options.text("nbd");
  if (!nbd.empty()) {
    if (!autopager::is_nbd_uri(nbd)) throw UsageError("option --nbd must be an NBD URI (nbd://host:port/export or nbd+unix:///?socket=PATH), not '" + nbd + "'");
    if (settings.backend == Backend::kernel) throw UsageError("option --nbd serves the pager's mappings; it does not go with --mmap");
    serve_data_from_nbd(nbd);
  }
  omp_set_num_threads(static_cast<int>(settings.threads));
  return settings;
}

// A string as a JSON string literal.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void print_result(const std::string& program, const Settings& settings, const Result& result) {
  std::printf("{\"metric\": %s, \"value\": %.9g, \"goal\": %s, \"mode\": %s, \"check\": %s, \"validation\": %s, "
              "\"workload\": %s, \"threads\": %u, \"checksum\": %s, \"stats\": %s}\n",
              json_string(result.metric).c_str(), result.value, json_string(result.goal).c_str(),
              json_string(result.mode.empty() ? backend_name(settings.backend) : result.mode).c_str(), json_string(result.check).c_str(),
              result.validation == Validation::full ? "\"full\"" : "\"checksum\"",
              json_string(program).c_str(), settings.threads, json_string(result.checksum).c_str(),
              result.stats.empty() ? "null" : result.stats.c_str());
  std::fflush(stdout);
}

}  // namespace

int workload_main(Options& options, int argc, char** argv, const WorkloadBody& body) {
  add_common_options(options);
  try {
    if (!options.parse(argc, argv)) return 0;
    const Settings settings = read_common_options(options);
    const Result result = body(options, settings);
    if (settings.generate_only) return 0;
    print_result(options.program(), settings, result);
    if (result.check != "ok") {
      std::cerr << options.program() << ": check failed: " << result.check << "\n";
      return 1;
    }
    return 0;
  } catch (const UsageError& error) {
    std::cerr << options.program() << ": " << error.what() << "\n(see " << options.program() << " --help)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << options.program() << ": error: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace workloads
