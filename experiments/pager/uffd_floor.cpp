// The floor: the bare userfaultfd round trip. One handler thread reads one fault event at a time and
// answers it with UFFDIO_COPY from a prepared source buffer (memory, no I/O); one application thread
// touches every system page of a registered region, a page (--page-size bytes, 4 KiB by default) at a
// time, in random or sequential order. Prints one JSON line with the microseconds per fault (mean over
// the run, and the median and p99 of the per-page latencies), the CPU time per fault and the MB/s.
//
// --file reads each page from a file with O_DIRECT (pread into the handler's aligned buffer, then
// UFFDIO_COPY from it): the floor of a pager serving faults from disk. --threads T application threads
// share the touches (with --handlers N, N faults are served at once). --seconds ends the touches early.
//
// --handoff adds what a pager with a fault reader and a filler pays on top: the reader passes each
// event to a second thread (mutex + condition variable; with `spin`, the worker busy-polls instead of
// sleeping), which does the UFFDIO_COPY. It decomposes the pager's cost; the floor itself is `none`.
//
// Usage: uffd_floor [--mib M] [--page-size BYTES] [--order random|sequential] [--seed S]
//                   [--handoff none|sleep|spin | --handlers N] [--file PATH] [--threads T] [--seconds S]

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

// Answers one fault: the page (of `page` bytes) at the same offset in `source`, installed with UFFDIO_COPY
// (EEXIST: the kernel repeated the event of a page already in). A copy that the kernel cuts short
// (EAGAIN) is resumed after the part already copied. Pages are counted from the region's start, which
// mmap aligns to the system page only. The region ends with one sentinel page that the application
// touches after its timed touches: its fault tells the handlers to stop.
struct Installer {
  int uffd;
  char* region;
  const char* source;
  std::size_t page;
  std::uintptr_t sentinel;  // address of the sentinel page
  int file = -1;            // with --file: read the page from it into the handler's buffer first

  bool is_sentinel(std::uintptr_t address) const { return address >= sentinel; }

  // `io_buffer`: the calling handler's, of `page` bytes, page-aligned.
  void install(std::uintptr_t address, char* io_buffer) const {
    const std::uintptr_t offset = (address - reinterpret_cast<std::uintptr_t>(region)) / page * page;
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<std::uintptr_t>(region) + offset;
    copy.src = reinterpret_cast<std::uintptr_t>(source + offset);
    if (file >= 0 && !is_sentinel(address)) {
      if (pread(file, io_buffer, page, static_cast<off_t>(offset)) != static_cast<ssize_t>(page)) fail("pread(--file)");
      copy.src = reinterpret_cast<std::uintptr_t>(io_buffer);
    }
    copy.len = page;
    while (ioctl(uffd, UFFDIO_COPY, &copy) != 0) {
      if (errno == EEXIST) return;
      if (errno != EAGAIN) fail("UFFDIO_COPY");
      const auto done = static_cast<std::uint64_t>(copy.copy > 0 ? copy.copy : 0);
      copy.dst += done;
      copy.src += done;
      copy.len -= done;
      copy.copy = 0;
    }
  }
};

// A handler's page-aligned buffer for its reads from --file (none without it), unmapped with the handler.
class IoBuffer {
 public:
  explicit IoBuffer(const Installer& in)
      : bytes_(in.file >= 0 ? in.page : 0), data_(bytes_ ? static_cast<char*>(map_anonymous(bytes_)) : nullptr) {}
  ~IoBuffer() {
    if (data_) munmap(data_, bytes_);
  }
  IoBuffer(const IoBuffer&) = delete;
  IoBuffer& operator=(const IoBuffer&) = delete;
  char* data() const { return data_; }

 private:
  std::size_t bytes_;
  char* data_;
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
void serve_directly(const Installer& in) {
  IoBuffer io_buffer(in);
  for (;;) {
    const std::uintptr_t address = read_fault(in.uffd);
    in.install(address, io_buffer.data());
    if (in.is_sentinel(address)) return;
  }
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

void serve_through_worker(const Installer& in, bool spin) {
  Handoff handoff(spin);
  std::thread worker([&] {
    IoBuffer io_buffer(in);
    for (;;) {
      const std::uintptr_t address = handoff.pop();
      in.install(address, io_buffer.data());
      if (in.is_sentinel(address)) return;
    }
  });
  for (std::uintptr_t address = 0; !in.is_sentinel(address);) {
    address = read_fault(in.uffd);
    handoff.push(address);
  }
  worker.join();
}

// N handlers, each waiting on the (now non-blocking) userfaultfd through its own epoll set with
// EPOLLEXCLUSIVE; the one that serves the sentinel signals `done` to the others.
void serve_exclusive(const Installer& in, unsigned handlers) {
  if (fcntl(in.uffd, F_SETFL, fcntl(in.uffd, F_GETFL) | O_NONBLOCK) != 0) fail("fcntl(O_NONBLOCK)");
  const int done = eventfd(0, EFD_CLOEXEC);
  if (done < 0) fail("eventfd");
  auto handler = [&] {
    IoBuffer io_buffer(in);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) fail("epoll_create1");
    epoll_event fault_event{};
    fault_event.events = EPOLLIN | EPOLLEXCLUSIVE;
    fault_event.data.fd = in.uffd;
    epoll_event done_event{};
    done_event.events = EPOLLIN;
    done_event.data.fd = done;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, in.uffd, &fault_event) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, done, &done_event) != 0)
      fail("epoll_ctl");
    for (;;) {
      uffd_msg msg;
      const ssize_t n = read(in.uffd, &msg, sizeof msg);
      if (n == static_cast<ssize_t>(sizeof msg)) {
        if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
        const auto address = static_cast<std::uintptr_t>(msg.arg.pagefault.address);
        in.install(address, io_buffer.data());
        if (in.is_sentinel(address)) {
          const std::uint64_t one = 1;
          if (write(done, &one, sizeof one) != sizeof one) fail("write(eventfd)");
        }
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) fail("read(userfaultfd)");
      epoll_event ready[2];
      const int k = epoll_wait(ep, ready, 2, -1);
      if (k < 0 && errno != EINTR) fail("epoll_wait");
      for (int i = 0; i < k; ++i) {
        if (ready[i].data.fd == done) {
          close(ep);
          return;
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < handlers; ++i) pool.emplace_back(handler);
  for (auto& t : pool) t.join();
  close(done);
}

enum class HandoffMode { none, sleep, spin };

struct Options {
  std::size_t mib = 256;
  std::size_t page_size = 0;  // 0: the system page
  bool sequential = false;
  unsigned handlers = 1;
  unsigned seed = 1;
  HandoffMode handoff = HandoffMode::none;
  std::string file;     // empty: pages come from memory
  unsigned threads = 1;
  double seconds = 0;   // 0: touch every page
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
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--mib") o.mib = std::stoull(v);
    else if (a == "--page-size") o.page_size = std::stoull(v);
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(v));
    else if (a == "--handlers") o.handlers = static_cast<unsigned>(std::stoul(v));
    else if (a == "--file") o.file = v;
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::stoul(v));
    else if (a == "--seconds") o.seconds = std::stod(v);
    else if (a == "--order") {
      if (v != "random" && v != "sequential") throw std::invalid_argument("--order is random or sequential, not " + v);
      o.sequential = v == "sequential";
    } else if (a == "--handoff") {
      if (v == "none") o.handoff = HandoffMode::none;
      else if (v == "sleep") o.handoff = HandoffMode::sleep;
      else if (v == "spin") o.handoff = HandoffMode::spin;
      else throw std::invalid_argument("--handoff is none, sleep or spin, not " + v);
    } else {
      throw std::invalid_argument("unknown option " + a +
                                  " (use --mib M, --page-size BYTES, --order random|sequential, --seed S, --handoff MODE, "
                                  "--handlers N, --file PATH, --threads T, --seconds S)");
    }
  }
  const std::size_t system_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (o.page_size == 0) o.page_size = system_page;
  if (o.page_size % system_page != 0 || (o.mib << 20) % o.page_size != 0 || o.mib == 0)
    throw std::invalid_argument("--page-size must be a multiple of the system page that divides --mib MiB");
  if (o.handlers == 0 || (o.handlers > 1 && o.handoff != HandoffMode::none))
    throw std::invalid_argument("--handlers is at least 1, and more than 1 only without --handoff");
  if (o.threads == 0) throw std::invalid_argument("--threads is at least 1");
  return o;
}

// CPU seconds (user + system) and context switches of this process so far, over all its threads.
struct Usage {
  double cpu_seconds;
  double switches;
};

Usage usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return {s(u.ru_utime) + s(u.ru_stime), static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
}

double percentile(std::vector<double> v, double q) {
  std::size_t k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  const std::size_t system_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t page = opt.page_size;
  const std::size_t bytes = opt.mib << 20;
  const std::size_t pages = bytes / page;

  char* source = static_cast<char*>(map_anonymous(bytes + page));  // with --file, only the sentinel's (zeros)
  for (std::size_t off = 0; opt.file.empty() && off < bytes + page; off += system_page)
    std::memset(source + off, static_cast<int>((off / system_page) & 0xff), system_page);
  char* region = static_cast<char*>(map_anonymous(bytes + page));

  int uffd = open_userfaultfd();
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uintptr_t>(region);
  reg.range.len = bytes + page;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) fail("UFFDIO_REGISTER");

  std::vector<std::size_t> order(pages);
  std::iota(order.begin(), order.end(), 0);
  if (!opt.sequential) std::shuffle(order.begin(), order.end(), std::mt19937_64(opt.seed));

  Installer installer{uffd, region, source, page, reinterpret_cast<std::uintptr_t>(region + bytes)};
  if (!opt.file.empty()) {
    installer.file = open(opt.file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (installer.file < 0) fail("open(--file, O_DIRECT)");
  }
  std::thread handler([&] {
    if (opt.handlers > 1) serve_exclusive(installer, opt.handlers);
    else if (opt.handoff == HandoffMode::none) serve_directly(installer);
    else serve_through_worker(installer, opt.handoff == HandoffMode::spin);
  });
  // Application thread t touches the pages order[t], order[t + T], ...
  std::vector<std::vector<double>> latencies(opt.threads);
  std::vector<std::uint64_t> checksums(opt.threads);
  const Usage before = usage();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.seconds));
  auto touch = [&](unsigned t) {
    for (std::size_t i = t; i < pages && (opt.seconds == 0 || Clock::now() < deadline); i += opt.threads) {
      const char* first = region + order[i] * page;
      const auto t0 = Clock::now();
      for (std::size_t off = 0; off < page; off += system_page)
        checksums[t] += static_cast<unsigned char>(*static_cast<const volatile char*>(first + off));
      latencies[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  };
  std::vector<std::thread> application;
  for (unsigned t = 0; t < opt.threads; ++t) application.emplace_back(touch, t);
  for (auto& t : application) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const Usage after = usage();
  std::vector<double> latency_us;
  for (const auto& l : latencies) latency_us.insert(latency_us.end(), l.begin(), l.end());
  const std::size_t touched = latency_us.size();
  const std::uint64_t checksum = std::accumulate(checksums.begin(), checksums.end(), std::uint64_t{0});
  (void)*static_cast<const volatile char*>(region + bytes);  // the sentinel: the handlers stop
  handler.join();

  if (opt.file.empty() && touched == pages) {
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < bytes / system_page; ++i) expected += i & 0xff;
    if (checksum != expected) throw std::runtime_error("wrong bytes in the faulted pages");
  }

  const double n = static_cast<double>(touched);
  std::printf(
      "{\"bench\": \"uffd_floor\", \"handoff\": \"%s\", \"handlers\": %u, \"threads\": %u, \"source\": \"%s\", \"order\": \"%s\", \"pages\": %zu, \"page_size\": %zu, "
      "\"seconds\": %.6f, \"faults_per_s\": %.1f, \"mb_per_s\": %.1f, \"us_per_fault\": %.3f, \"p50_us\": %.3f, "
      "\"p99_us\": %.3f, \"cpu_us_per_fault\": %.3f, \"switches_per_fault\": %.3f}\n",
      name(opt.handoff), opt.handlers, opt.threads, opt.file.empty() ? "memory" : "file", opt.sequential ? "sequential" : "random",
      touched, page, seconds, n / seconds, n * static_cast<double>(page) / seconds / 1e6, seconds * 1e6 / n, percentile(latency_us, 0.5),
      percentile(latency_us, 0.99), (after.cpu_seconds - before.cpu_seconds) * 1e6 / n,
      (after.switches - before.switches) / n);
  close(uffd);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "uffd_floor: %s\n", e.what());
  return 1;
}
