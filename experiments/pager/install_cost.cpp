// What it costs in CPU to put a page into a userfaultfd region and take it out again, by the two
// mechanisms the kernel offers an anonymous region: UFFDIO_COPY in and a zap (MADV_DONTNEED) out, as
// the pager fills and evicts today, against UFFDIO_MOVE in from a staging slot and back out into it
// (the pages recycled, nothing allocated, zeroed or copied). Also probes the two rules that decide
// where a move may replace the copy: a move into a read-only region, and whether a page moved into a
// write-protect-tracked region stays write-protected. One JSON line per page size and round.
//
//   install_cost [--region-mib N] [--rounds N] [--page-kib K ...]

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "json_line.hpp"
#include "uffd.hpp"

namespace {

constexpr std::size_t kHugePage = 2u << 20;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// An anonymous private mapping aligned to a huge page, so that 2 MiB moves can be PMD moves.
char* map_aligned(std::size_t length, int prot, bool huge) {
  void* area = mmap(nullptr, length + kHugePage, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(area) + kHugePage - 1) & ~(kHugePage - 1));
  madvise(aligned, length, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return aligned;
}

void check(int err, const char* what) {
  if (err == 0) return;
  std::fprintf(stderr, "install_cost: %s failed: %s\n", what, std::strerror(err));
  std::exit(1);
}

void measure(std::size_t region_bytes, std::size_t page, bool huge, int round) {
  autopager::Userfaultfd uffd;
  if (!uffd.has_move()) {
    std::fprintf(stderr, "install_cost: this kernel has no UFFDIO_MOVE (Linux 6.8)\n");
    std::exit(1);
  }
  char* region = map_aligned(region_bytes, PROT_READ | PROT_WRITE, huge);
  char* slot = map_aligned(page, PROT_READ | PROT_WRITE, huge);
  std::memset(slot, 0x5a, page);
  uffd.register_range(region, region_bytes, autopager::WriteProtect::kNo);
  uffd.register_range(slot, page, autopager::WriteProtect::kNo);  // a move's destination must be registered
  const std::size_t pages = region_bytes / page;

  auto start = Clock::now();
  for (std::size_t i = 0; i < pages; ++i)
    check(uffd.copy(region + i * page, slot, page, autopager::WriteProtect::kNo), "UFFDIO_COPY");
  const double copy = seconds_since(start);
  start = Clock::now();
  madvise(region, region_bytes, MADV_DONTNEED);
  const double zap = seconds_since(start);
  start = Clock::now();
  for (std::size_t i = 0; i < pages; ++i) {
    check(uffd.move(region + i * page, slot, page), "UFFDIO_MOVE in");
    check(uffd.move(slot, region + i * page, page), "UFFDIO_MOVE out");
  }
  const double move = seconds_since(start);
  const bool intact = static_cast<unsigned char>(slot[page - 1]) == 0x5a;

  const double gb = static_cast<double>(region_bytes) / 1e9;
  std::printf("%s\n", bench::JsonLine()
                          .add("page_kib", static_cast<std::uint64_t>(page >> 10))
                          .add("huge_pages", huge)
                          .add("round", static_cast<unsigned>(round))
                          .add("copy_gb_per_s", gb / copy)
                          .add("zap_gb_per_s", gb / zap)
                          .add("copy_and_zap_gb_per_s", gb / (copy + zap))
                          .add("move_in_and_out_gb_per_s", gb / move)
                          .add("moved_data_intact", intact)
                          .str()
                          .c_str());
  munmap(region, region_bytes);
  munmap(slot, page);
}

void* write_one_byte(void* address) {
  *static_cast<volatile char*>(address) = 1;
  return nullptr;
}

// Whether a write to a page moved into a write-protect-tracked region reaches the pager as a fault.
bool write_protect_kept_by_move(autopager::Userfaultfd& uffd) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  char* region = map_aligned(page, PROT_READ | PROT_WRITE, false);
  char* slot = map_aligned(page, PROT_READ | PROT_WRITE, false);
  std::memset(slot, 1, page);
  uffd.register_range(region, page, autopager::WriteProtect::kYes);
  uffd.register_range(slot, page, autopager::WriteProtect::kYes);
  check(uffd.write_protect(slot, page, autopager::WriteProtect::kYes), "UFFDIO_WRITEPROTECT");
  check(uffd.move(region, slot, page), "UFFDIO_MOVE");
  pthread_t writer;
  pthread_create(&writer, nullptr, write_one_byte, region);
  uffd_msg message{};
  bool faulted = false;
  for (int waited_ms = 0; waited_ms < 1000 && !faulted; ++waited_ms) {
    if (read(uffd.fd(), &message, sizeof message) == static_cast<ssize_t>(sizeof message)) faulted = true;
    else usleep(1000);
  }
  if (faulted) uffd.write_protect(region, page, autopager::WriteProtect::kNo);  // lets the writer go on
  pthread_join(writer, nullptr);
  return faulted && (message.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) != 0;
}

void probe() {
  autopager::Userfaultfd uffd;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  char* read_only = map_aligned(page, PROT_READ, false);
  char* slot = map_aligned(page, PROT_READ | PROT_WRITE, false);
  std::memset(slot, 1, page);
  uffd.register_range(read_only, page, autopager::WriteProtect::kNo);
  const int into_read_only = uffd.move(read_only, slot, page);
  std::printf("%s\n", bench::JsonLine()
                          .add("probe", "semantics")
                          .add("move_into_read_only_region", into_read_only == 0 ? "moved" : std::strerror(into_read_only))
                          .add("write_protect_kept_by_move", write_protect_kept_by_move(uffd))
                          .str()
                          .c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t region_mib = 512;
  int rounds = 3;
  std::vector<std::size_t> page_kib;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    const std::size_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (option == "--region-mib") region_mib = value;
    else if (option == "--rounds") rounds = static_cast<int>(value);
    else if (option == "--page-kib") page_kib.push_back(value);
    else {
      std::fprintf(stderr, "usage: install_cost [--region-mib N] [--rounds N] [--page-kib K ...]\n");
      return 2;
    }
  }
  if (page_kib.empty()) page_kib = {64, 1024, 4096};
  probe();
  for (int round = 0; round < rounds; ++round)
    for (std::size_t kib : page_kib)
      for (bool huge : {false, true})
        if (!huge || (kib << 10) % kHugePage == 0) measure(region_mib << 20, kib << 10, huge, round);
  return 0;
}
