// The floor: the bare userfaultfd round trip. One handler thread reads one fault event at a time and
// answers it with UFFDIO_COPY from a prepared source buffer (memory, no I/O); one application thread
// touches N pages of a registered region in random order. Prints one JSON line with the microseconds
// per 4 KiB fault (mean over the run, and the median and p99 of the per-touch latencies).
//
// Usage: uffd_floor [--pages N] [--seed S]

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

int open_userfaultfd() {
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (fd < 0) {
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) fail("userfaultfd (needs root, vm.unprivileged_userfaultfd=1 or /dev/userfaultfd)");
    fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
    close(dev);
    if (fd < 0) fail("USERFAULTFD_IOC_NEW");
  }
  uffdio_api api{};
  api.api = UFFD_API;
  if (ioctl(fd, UFFDIO_API, &api) != 0) fail("UFFDIO_API");
  return fd;
}

void* map_anonymous(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("mmap");
  return p;
}

// Serves exactly `faults` missing-page faults, one event per read(2), each with one UFFDIO_COPY of the
// page at the same offset in `source`.
void serve(int uffd, char* region, const char* source, std::size_t page, std::size_t faults) {
  for (std::size_t served = 0; served < faults;) {
    uffd_msg msg;
    ssize_t n = read(uffd, &msg, sizeof msg);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof msg)) fail("read(userfaultfd)");
    if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
    std::uintptr_t offset = (msg.arg.pagefault.address & ~(page - 1)) - reinterpret_cast<std::uintptr_t>(region);
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<std::uintptr_t>(region) + offset;
    copy.src = reinterpret_cast<std::uintptr_t>(source + offset);
    copy.len = page;
    if (ioctl(uffd, UFFDIO_COPY, &copy) != 0 && errno != EEXIST) fail("UFFDIO_COPY");
    ++served;
  }
}

struct Options {
  std::size_t pages = 65536;
  unsigned seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
    if (a == "--pages") o.pages = std::stoull(argv[++i]);
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(argv[++i]));
    else throw std::invalid_argument("unknown option " + a + " (use --pages N, --seed S)");
  }
  if (o.pages == 0) throw std::invalid_argument("--pages must be at least 1");
  return o;
}

double percentile(std::vector<double> v, double q) {
  std::size_t k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t bytes = opt.pages * page;

  char* source = static_cast<char*>(map_anonymous(bytes));
  for (std::size_t i = 0; i < opt.pages; ++i) std::memset(source + i * page, static_cast<int>(i & 0xff), page);
  char* region = static_cast<char*>(map_anonymous(bytes));

  int uffd = open_userfaultfd();
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uintptr_t>(region);
  reg.range.len = bytes;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) fail("UFFDIO_REGISTER");

  std::vector<std::size_t> order(opt.pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(opt.seed));
  std::vector<double> latency_us(opt.pages);

  std::thread handler(serve, uffd, region, source, page, opt.pages);
  std::uint64_t checksum = 0;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < opt.pages; ++i) {
    const auto t0 = Clock::now();
    checksum += static_cast<unsigned char>(*static_cast<volatile char*>(region + order[i] * page));
    latency_us[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  handler.join();

  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < opt.pages; ++i) expected += i & 0xff;
  if (checksum != expected) throw std::runtime_error("wrong bytes in the faulted pages");

  std::printf(
      "{\"bench\": \"uffd_floor\", \"pages\": %zu, \"page_size\": %zu, \"seconds\": %.6f, "
      "\"faults_per_s\": %.1f, \"us_per_fault\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f}\n",
      opt.pages, page, seconds, static_cast<double>(opt.pages) / seconds,
      seconds * 1e6 / static_cast<double>(opt.pages), percentile(latency_us, 0.5), percentile(latency_us, 0.99));
  close(uffd);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "uffd_floor: %s\n", e.what());
  return 1;
}
