#include "options.hpp"

#include <stdexcept>
#include <string>

namespace bench {
namespace {

const char* const kUsage =
    "usage: fault_bench [--backend pager|mmap-private|mmap-shared] [--store file|memory]\n"
    "  [--pattern random|sequential] [--file PATH] [--size BYTES] [--direct] [--madvise normal|random|sequential]\n"
    "  [--threads T] [--prefetch B] [--seconds S] [--seed N]\n"
    "  [--page-size BYTES] [--fillers F] [--evictors E] [--buffer-mib M] [--read-ahead R]\n"
    "  [--max-fault-events K] [--high-water PCT] [--low-water PCT]";

std::uint64_t number(const std::string& option, const char* text) {
  std::size_t used = 0;
  std::uint64_t v = 0;
  try {
    v = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || text[used] != '\0') throw std::invalid_argument(option + " needs a number, not '" + text + "'");
  return v;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--direct") {
      o.direct = true;
      continue;
    }
    if (a == "--help" || a == "-h") throw std::invalid_argument(kUsage);
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a + "\n" + kUsage);
    const char* v = argv[++i];
    const std::string s = v;
    if (a == "--backend") {
      if (s == "pager") o.backend = Backend::pager;
      else if (s == "mmap-private") o.backend = Backend::mmap_private;
      else if (s == "mmap-shared") o.backend = Backend::mmap_shared;
      else throw std::invalid_argument("--backend is pager, mmap-private or mmap-shared, not " + s);
    } else if (a == "--store") {
      if (s == "file") o.store = StoreKind::file;
      else if (s == "memory") o.store = StoreKind::memory;
      else throw std::invalid_argument("--store is file or memory, not " + s);
    } else if (a == "--pattern") {
      if (s == "random") o.pattern = Pattern::random;
      else if (s == "sequential") o.pattern = Pattern::sequential;
      else throw std::invalid_argument("--pattern is random or sequential, not " + s);
    } else if (a == "--madvise") {
      if (s == "normal") o.advice = Advice::normal;
      else if (s == "random") o.advice = Advice::random;
      else if (s == "sequential") o.advice = Advice::sequential;
      else throw std::invalid_argument("--madvise is normal, random or sequential, not " + s);
    } else if (a == "--file") o.file = s;
    else if (a == "--size") o.size = number(a, v);
    else if (a == "--threads") o.threads = static_cast<unsigned>(number(a, v));
    else if (a == "--prefetch") o.prefetch = static_cast<unsigned>(number(a, v));
    else if (a == "--seconds") o.seconds = std::stod(s);
    else if (a == "--seed") o.seed = static_cast<unsigned>(number(a, v));
    else if (a == "--page-size") o.page_size = number(a, v);
    else if (a == "--fillers") o.fillers = static_cast<unsigned>(number(a, v));
    else if (a == "--evictors") o.evictors = static_cast<unsigned>(number(a, v));
    else if (a == "--buffer-mib") o.buffer_mib = number(a, v);
    else if (a == "--read-ahead") o.read_ahead = static_cast<unsigned>(number(a, v));
    else if (a == "--max-fault-events") o.max_fault_events = static_cast<unsigned>(number(a, v));
    else if (a == "--high-water") o.high_water = static_cast<unsigned>(number(a, v));
    else if (a == "--low-water") o.low_water = static_cast<unsigned>(number(a, v));
    else throw std::invalid_argument("unknown option " + a + "\n" + kUsage);
  }
  if (o.threads == 0) throw std::invalid_argument("--threads must be at least 1");
  if (o.seconds <= 0) throw std::invalid_argument("--seconds must be positive");
  if (o.backend != Backend::pager && o.store == StoreKind::memory)
    throw std::invalid_argument("--store memory needs --backend pager (the kernel maps only the file)");
  if (o.store == StoreKind::file && o.file.empty()) throw std::invalid_argument("--file PATH is required");
  if (o.store == StoreKind::memory && o.size == 0) throw std::invalid_argument("--store memory needs --size BYTES");
  return o;
}

const char* name(Backend b) {
  switch (b) {
    case Backend::pager: return "pager";
    case Backend::mmap_private: return "mmap-private";
    case Backend::mmap_shared: return "mmap-shared";
  }
  return "?";
}

const char* name(StoreKind s) { return s == StoreKind::file ? "file" : "memory"; }

const char* name(Pattern p) { return p == Pattern::random ? "random" : "sequential"; }

}  // namespace bench
