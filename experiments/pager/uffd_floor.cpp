// The floor: the bare userfaultfd round trip. One handler thread reads one fault event at a time and
// answers it with UFFDIO_COPY from a prepared source buffer (memory, no I/O); one application thread
// touches N pages of a registered region in random order. Prints one JSON line with the microseconds
// per 4 KiB fault (mean over the run, and the median and p99 of the per-touch latencies).
//
// --handoff adds what a pager with a fault reader and a filler pays on top: the reader passes each
// event to a second thread (mutex + condition variable; with `spin`, the worker busy-polls instead of
// sleeping), which does the UFFDIO_COPY. It decomposes the pager's cost; the floor itself is `none`.
//
// Usage: uffd_floor [--pages N] [--seed S] [--handoff none|sleep|spin]

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
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

// Answers one fault: the page at the same offset in `source`, installed with UFFDIO_COPY.
struct Installer {
  int uffd;
  char* region;
  const char* source;
  std::size_t page;

  void install(std::uintptr_t address) const {
    const std::uintptr_t offset = (address & ~(page - 1)) - reinterpret_cast<std::uintptr_t>(region);
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<std::uintptr_t>(region) + offset;
    copy.src = reinterpret_cast<std::uintptr_t>(source + offset);
    copy.len = page;
    if (ioctl(uffd, UFFDIO_COPY, &copy) != 0 && errno != EEXIST) fail("UFFDIO_COPY");
  }
};

// Reads the next missing-page fault, one event per read(2).
std::uintptr_t read_fault(int uffd) {
  for (;;) {
    uffd_msg msg;
    ssize_t n = read(uffd, &msg, sizeof msg);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof msg)) fail("read(userfaultfd)");
    if (msg.event == UFFD_EVENT_PAGEFAULT) return static_cast<std::uintptr_t>(msg.arg.pagefault.address);
  }
}

// The floor: the thread that reads the event installs the page.
void serve_directly(const Installer& in, std::size_t faults) {
  for (std::size_t served = 0; served < faults; ++served) in.install(read_fault(in.uffd));
}

// One hand-off between a reader and a worker, as in a pager's fault reader and filler.
class Handoff {
 public:
  explicit Handoff(bool spin) : spin_(spin) {}
  void push(std::uintptr_t address) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(address);
      pending_.fetch_add(1, std::memory_order_release);
    }
    if (!spin_) ready_.notify_one();
  }
  std::uintptr_t pop() {
    if (spin_)
      while (pending_.load(std::memory_order_acquire) == 0) __builtin_ia32_pause();
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    pending_.fetch_sub(1, std::memory_order_relaxed);
    std::uintptr_t address = queue_.front();
    queue_.pop_front();
    return address;
  }

 private:
  const bool spin_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::uintptr_t> queue_;
  std::atomic<std::size_t> pending_{0};
};

void serve_through_worker(const Installer& in, std::size_t faults, bool spin) {
  Handoff handoff(spin);
  std::thread worker([&] {
    for (std::size_t served = 0; served < faults; ++served) in.install(handoff.pop());
  });
  for (std::size_t read = 0; read < faults; ++read) handoff.push(read_fault(in.uffd));
  worker.join();
}

enum class HandoffMode { none, sleep, spin };

struct Options {
  std::size_t pages = 65536;
  unsigned seed = 1;
  HandoffMode handoff = HandoffMode::none;
};

const char* name(HandoffMode m) {
  switch (m) {
    case HandoffMode::none: return "none";
    case HandoffMode::sleep: return "sleep";
    case HandoffMode::spin: return "spin";
  }
  return "?";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
    if (a == "--pages") o.pages = std::stoull(argv[++i]);
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (a == "--handoff") {
      const std::string m = argv[++i];
      if (m == "none") o.handoff = HandoffMode::none;
      else if (m == "sleep") o.handoff = HandoffMode::sleep;
      else if (m == "spin") o.handoff = HandoffMode::spin;
      else throw std::invalid_argument("--handoff is none, sleep or spin, not " + m);
    } else throw std::invalid_argument("unknown option " + a + " (use --pages N, --seed S, --handoff MODE)");
  }
  if (o.pages == 0) throw std::invalid_argument("--pages must be at least 1");
  return o;
}

// CPU seconds (user + system) this process has used so far, over all its threads.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
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

  const Installer installer{uffd, region, source, page};
  std::thread handler([&] {
    if (opt.handoff == HandoffMode::none) serve_directly(installer, opt.pages);
    else serve_through_worker(installer, opt.pages, opt.handoff == HandoffMode::spin);
  });
  std::uint64_t checksum = 0;
  const double cpu_start = cpu_seconds();
  const auto start = Clock::now();
  for (std::size_t i = 0; i < opt.pages; ++i) {
    const auto t0 = Clock::now();
    checksum += static_cast<unsigned char>(*static_cast<volatile char*>(region + order[i] * page));
    latency_us[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  handler.join();
  const double cpu = cpu_seconds() - cpu_start;

  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < opt.pages; ++i) expected += i & 0xff;
  if (checksum != expected) throw std::runtime_error("wrong bytes in the faulted pages");

  std::printf(
      "{\"bench\": \"uffd_floor\", \"handoff\": \"%s\", \"pages\": %zu, \"page_size\": %zu, \"seconds\": %.6f, "
      "\"faults_per_s\": %.1f, \"us_per_fault\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, \"cpu_us_per_fault\": %.3f}\n",
      name(opt.handoff), opt.pages, page, seconds, static_cast<double>(opt.pages) / seconds,
      seconds * 1e6 / static_cast<double>(opt.pages), percentile(latency_us, 0.5), percentile(latency_us, 0.99),
      cpu * 1e6 / static_cast<double>(opt.pages));
  close(uffd);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "uffd_floor: %s\n", e.what());
  return 1;
}
