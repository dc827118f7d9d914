// What it costs in CPU to put a page into a userfaultfd region and take it out again, by the two
// mechanisms the kernel offers an anonymous region: UFFDIO_COPY in and a zap (MADV_DONTNEED) out, as
// the pager fills and evicts today, against UFFDIO_MOVE in from a staging slot and back out into it
// (the pages recycled, nothing allocated, zeroed or copied). Also probes the two rules that decide
// where a move may replace the copy: a move into a read-only region, and whether a page moved into a
// write-protect-tracked region stays write-protected. One JSON line per page size and round.
//
// The minor_* columns give a third route, for read-only regions (where a move is refused): the region
// is a PROT_READ MAP_SHARED mapping of a memfd registered for missing and minor faults; a filler would
// read the file's bytes (O_DIRECT) into a writable alias mapping of the same memfd, which allocates the
// memfd's pages zeroed through get_user_pages, modelled by MADV_POPULATE_WRITE on the alias (the data's
// copy is the disk's DMA, not counted); UFFDIO_CONTINUE maps the page into the region (nothing copied);
// a punched hole (fallocate PUNCH_HOLE) unmaps it from both mappings and frees it. Each step is timed
// over the whole region, page by page (the zap above is one call over the region). With huge_pages
// both mappings are MADV_HUGEPAGE, which gives shmem huge pages only as
// /sys/kernel/mm/transparent_hugepage/shmem_enabled allows (printed; with "never" the huge-page minor
// columns equal the plain ones; minor_shmem_pmd_mapped_kib shows what the alias got).
// The "minor" probe lines, for a region registered minor-only and missing|minor: whether a page
// written through the alias and CONTINUEd reads the same through the region, and what a read of the
// region meets once the page's hole is punched. Registered minor-only, the kernel serves the absent
// page as a fresh zeroed page of the file, with no userfault: a pager must register missing too, and
// answer that missing fault by filling the alias and CONTINUE. The minor route has a userfaultfd of its
// own (MinorUserfaultfd below): the pager does not use minor faults, so its autopager::Userfaultfd does
// not ask for them.
//
// Every time is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what it runs itself and what
// the kernel does in its system calls, not the time it waits or other processes run; a busy machine
// still perturbs it (caches, clock frequency).
//
//   install_cost [--region-mib N] [--rounds N] [--page-kib K ...]

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "json_line.hpp"
#include "uffd.hpp"

#ifndef MADV_POPULATE_WRITE  // Linux 5.14
#define MADV_POPULATE_WRITE 23
#endif

namespace {

constexpr std::size_t kHugePage = 2u << 20;

// The calling thread's CPU time in seconds spent in `work`: its own and the kernel's in its system calls.
template <typename Work>
double cpu_seconds(Work&& work) {
  timespec start{}, end{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  work();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
  return static_cast<double>(end.tv_sec - start.tv_sec) + static_cast<double>(end.tv_nsec - start.tv_nsec) * 1e-9;
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

// A non-blocking userfaultfd with minor faults on shmem (Linux 5.13), for the minor route alone.
class MinorUserfaultfd {
 public:
  MinorUserfaultfd() {
    fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (fd_ < 0 && errno == EPERM)  // unprivileged: faults raised in user mode only, as the probes' are
      fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_MINOR_SHMEM;
    if (fd_ >= 0 && ioctl(fd_, UFFDIO_API, &api) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~MinorUserfaultfd() {
    if (fd_ >= 0) close(fd_);
  }
  MinorUserfaultfd(const MinorUserfaultfd&) = delete;
  MinorUserfaultfd& operator=(const MinorUserfaultfd&) = delete;

  // False when the kernel lacks minor faults on shmem (or userfaultfd).
  bool usable() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // A page the file has but the range does not map raises a minor fault. A page the file lacks raises a
  // missing fault with `also_missing`; without, the kernel allocates a zeroed page into the file, unseen.
  void register_range(void* base, std::size_t length, bool also_missing) {
    uffdio_register reg{};
    reg.range = {reinterpret_cast<std::uint64_t>(base), length};
    reg.mode = UFFDIO_REGISTER_MODE_MINOR | (also_missing ? UFFDIO_REGISTER_MODE_MISSING : 0);
    check(ioctl(fd_, UFFDIO_REGISTER, &reg) == 0 ? 0 : errno, "UFFDIO_REGISTER(MINOR)");
  }
  void unregister_range(void* base, std::size_t length) {
    uffdio_range range{reinterpret_cast<std::uint64_t>(base), length};
    ioctl(fd_, UFFDIO_UNREGISTER, &range);
  }

  // Maps the file's pages into the range (nothing copied) and wakes the threads waiting there; resumes
  // after a partial map (EAGAIN). Returns 0 or the errno.
  int continue_range(void* base, std::size_t length) {
    uffdio_continue args{};
    args.range = {reinterpret_cast<std::uint64_t>(base), length};
    while (ioctl(fd_, UFFDIO_CONTINUE, &args) != 0) {
      if (errno != EAGAIN) return errno;
      if (args.mapped > 0) {
        args.range.start += static_cast<std::uint64_t>(args.mapped);
        args.range.len -= static_cast<std::uint64_t>(args.mapped);
      }
      args.mapped = 0;
    }
    return 0;
  }

 private:
  int fd_ = -1;
};

// One shared mapping of a memfd at a huge-page-aligned address (so that shmem can map huge pages).
struct SharedMapping {
  char* reservation = nullptr;
  std::size_t reserved = 0;
  char* at = nullptr;
  SharedMapping(int fd, std::size_t length, int prot, bool huge) : reserved(length + kHugePage) {
    void* area = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    reservation = static_cast<char*>(area);
    at = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(area) + kHugePage - 1) & ~(kHugePage - 1));
    if (mmap(at, length, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
      std::perror("mmap memfd");
      std::exit(1);
    }
    madvise(at, length, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  ~SharedMapping() { munmap(reservation, reserved); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
};

int make_memfd(std::size_t length) {
  const int fd = memfd_create("install_cost", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(length)) != 0) {
    std::perror("memfd");
    std::exit(1);
  }
  return fd;
}

std::string first_line(const char* path) {
  std::ifstream file(path);
  std::string line;
  if (!std::getline(file, line)) return "unavailable";
  return line;
}

// This process's shmem mapped by PMD (a huge page), from /proc/self/smaps_rollup.
std::uint64_t shmem_pmd_mapped_kib() {
  std::ifstream file("/proc/self/smaps_rollup");
  std::string key;
  std::uint64_t kib = 0;
  while (file >> key) {
    if (key == "ShmemPmdMapped:") {
      file >> kib;
      return kib;
    }
    file.ignore(1 << 16, '\n');
  }
  return 0;
}

struct MinorCost {
  double populate = 0, install = 0, punch = 0;  // seconds
  std::uint64_t pmd_mapped_kib = 0;
};

// The minor-fault route for a read-only region: the region is a PROT_READ shared mapping of a memfd,
// registered for missing and minor faults; a filler reads the file into a writable alias of the same
// memfd (modelled by MADV_POPULATE_WRITE: the pages the read would allocate, zeroed; the DMA's copy is
// not the CPU's); UFFDIO_CONTINUE maps each page into the region; a punched hole drops it from both.
MinorCost measure_minor(MinorUserfaultfd& uffd, std::size_t region_bytes, std::size_t page, bool huge) {
  MinorCost cost;
  const int fd = make_memfd(region_bytes);
  {
    SharedMapping region(fd, region_bytes, PROT_READ, huge);
    SharedMapping alias(fd, region_bytes, PROT_READ | PROT_WRITE, huge);
    uffd.register_range(region.at, region_bytes, true);
    const std::size_t pages = region_bytes / page;
    cost.populate = cpu_seconds([&] {
      for (std::size_t i = 0; i < pages; ++i)
        check(madvise(alias.at + i * page, page, MADV_POPULATE_WRITE) == 0 ? 0 : errno, "MADV_POPULATE_WRITE");
    });
    cost.pmd_mapped_kib = shmem_pmd_mapped_kib();
    cost.install = cpu_seconds([&] {
      for (std::size_t i = 0; i < pages; ++i) check(uffd.continue_range(region.at + i * page, page), "UFFDIO_CONTINUE");
    });
    cost.punch = cpu_seconds([&] {
      for (std::size_t i = 0; i < pages; ++i)
        check(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(i * page),
                        static_cast<off_t>(page)) == 0
                  ? 0
                  : errno,
              "fallocate(PUNCH_HOLE)");
    });
    uffd.unregister_range(region.at, region_bytes);
  }
  close(fd);
  return cost;
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

  const double copy = cpu_seconds([&] {
    for (std::size_t i = 0; i < pages; ++i)
      check(uffd.copy(region + i * page, slot, page, autopager::WriteProtect::kNo), "UFFDIO_COPY");
  });
  const double zap = cpu_seconds([&] { madvise(region, region_bytes, MADV_DONTNEED); });
  const double move = cpu_seconds([&] {
    for (std::size_t i = 0; i < pages; ++i) {
      check(uffd.move(region + i * page, slot, page), "UFFDIO_MOVE in");
      check(uffd.move(slot, region + i * page, page), "UFFDIO_MOVE out");
    }
  });
  const bool intact = static_cast<unsigned char>(slot[page - 1]) == 0x5a;

  munmap(region, region_bytes);
  munmap(slot, page);

  const double gb = static_cast<double>(region_bytes) / 1e9;
  bench::JsonLine line;
  line.add("page_kib", static_cast<std::uint64_t>(page >> 10))
      .add("huge_pages", huge)
      .add("round", static_cast<unsigned>(round))
      .add("copy_gb_per_s", gb / copy)
      .add("zap_gb_per_s", gb / zap)
      .add("copy_and_zap_gb_per_s", gb / (copy + zap))
      .add("move_in_and_out_gb_per_s", gb / move)
      .add("moved_data_intact", intact);
  MinorUserfaultfd minor_uffd;
  if (minor_uffd.usable()) {
    const MinorCost minor = measure_minor(minor_uffd, region_bytes, page, huge);
    line.add("minor_populate_gb_per_s", gb / minor.populate)
        .add("minor_continue_gb_per_s", gb / minor.install)
        .add("minor_punch_hole_gb_per_s", gb / minor.punch)
        .add("minor_fill_and_drop_gb_per_s", gb / (minor.populate + minor.install + minor.punch))
        .add("minor_shmem_pmd_mapped_kib", minor.pmd_mapped_kib);
  }
  std::printf("%s\n", line.str().c_str());
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

struct Reader {
  const volatile char* address;
  std::atomic<bool> done{false};
  char value = 0;
};

void* read_one_byte(void* argument) {
  auto* reader = static_cast<Reader*>(argument);
  reader->value = *reader->address;
  reader->done = true;
  return nullptr;
}

// Reads the region's first byte in another thread; returns the kind of userfault that arrives within a
// second ("minor", "missing", "write_protect") or "none" if the read ends without one. `resolve`
// answers a fault. `value` is the byte the reader saw.
template <typename Resolve>
std::string read_in_thread(int uffd, char* region, Resolve resolve, char& value) {
  Reader reader;
  reader.address = region;
  pthread_t thread;
  pthread_create(&thread, nullptr, read_one_byte, &reader);
  std::string kind = "none";
  for (int waited_ms = 0; waited_ms < 1000 && !reader.done; waited_ms += 10) {
    pollfd ready{uffd, POLLIN, 0};
    if (poll(&ready, 1, 10) != 1) continue;
    uffd_msg message{};
    if (read(uffd, &message, sizeof message) != static_cast<ssize_t>(sizeof message)) continue;
    if (message.event != UFFD_EVENT_PAGEFAULT) {
      kind = "event " + std::to_string(message.event);
      break;
    }
    const auto flags = message.arg.pagefault.flags;
    kind = (flags & UFFD_PAGEFAULT_FLAG_MINOR) ? "minor" : (flags & UFFD_PAGEFAULT_FLAG_WP) ? "write_protect" : "missing";
    resolve();
    break;
  }
  pthread_join(thread, nullptr);
  value = reader.value;
  return kind;
}

std::uint64_t allocated_bytes(int fd) {
  struct stat status {};
  fstat(fd, &status);
  return static_cast<std::uint64_t>(status.st_blocks) * 512;
}

// The minor route's rules, for a region registered for minor faults only or for missing faults too:
// whether a page written through the alias and CONTINUEd reads the same through the read-only region,
// and what a read of the region meets once the page's hole is punched (the page gone from the file).
void probe_minor(bool also_missing) {
  MinorUserfaultfd uffd;
  bench::JsonLine line;
  line.add("probe", "minor").add("registered", also_missing ? "missing|minor" : "minor");
  if (!uffd.usable()) {
    std::printf("%s\n", line.add("minor_shmem", false).str().c_str());
    return;
  }
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const int fd = make_memfd(page);
  {
    SharedMapping region(fd, page, PROT_READ, false);
    SharedMapping alias(fd, page, PROT_READ | PROT_WRITE, false);
    uffd.register_range(region.at, page, also_missing);
    int continued = 0;
    char value = 0;

    // The file has the page (written through the alias), the region does not map it yet.
    std::memset(alias.at, 0xa5, page);
    const std::string present = read_in_thread(
        uffd.fd(), region.at, [&] { continued = uffd.continue_range(region.at, page); }, value);
    line.add("present_page_fault", present)
        .add("continue", continued == 0 ? "mapped" : std::strerror(continued))
        .add("region_reads_alias_bytes", value == static_cast<char>(0xa5));

    // The hole punched: the page leaves the file and both mappings.
    check(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(page)) == 0 ? 0 : errno,
          "fallocate(PUNCH_HOLE)");
    const std::uint64_t before = allocated_bytes(fd);
    value = 0x11;
    continued = -1;
    const std::string absent = read_in_thread(
        uffd.fd(), region.at,
        [&] {
          std::memset(alias.at, 0x3c, page);  // the filler reads the file into the alias
          continued = uffd.continue_range(region.at, page);
        },
        value);
    line.add("file_bytes_after_punch", before)
        .add("absent_page_fault", absent)
        .add("absent_page_byte_read", static_cast<unsigned>(static_cast<unsigned char>(value)))
        .add("file_bytes_after_read", allocated_bytes(fd));
    if (absent == "none")
      line.add("absent_page_outcome", value == 0 ? "zeros served without a fault, page allocated into the file"
                                                 : "read without a fault");
    else
      line.add("absent_page_outcome", continued == 0 && value == 0x3c
                                          ? "fault resolved by writing the alias and UFFDIO_CONTINUE"
                                          : "fault not resolved by UFFDIO_CONTINUE");
    uffd.unregister_range(region.at, page);
  }
  close(fd);
  std::printf("%s\n", line.str().c_str());
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
  probe_minor(false);
  probe_minor(true);
  const std::string shmem_thp = first_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::printf("%s\n",
              bench::JsonLine()
                  .add("shmem_enabled", shmem_thp)
                  .add("shmem_enabled_2048kB", first_line("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/shmem_enabled"))
                  .add("note", shmem_thp.find("[never]") != std::string::npos || shmem_thp.find("[deny]") != std::string::npos
                                   ? "no shmem huge pages: the minor columns with huge_pages equal those without"
                                   : "shmem huge pages as the setting allows: see minor_shmem_pmd_mapped_kib")
                  .str()
                  .c_str());
  for (int round = 0; round < rounds; ++round)
    for (std::size_t kib : page_kib)
      for (bool huge : {false, true})
        if (!huge || (kib << 10) % kHugePage == 0) measure(region_mib << 20, kib << 10, huge, round);
  return 0;
}
