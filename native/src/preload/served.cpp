#include "served.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "autopager/config.hpp"
#include "kernel.hpp"

namespace autopager::preload {
namespace {

std::size_t round_up(std::size_t n, std::size_t unit) { return (n + unit - 1) / unit * unit; }

std::string path_of(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char path[4096];
  ssize_t n = readlink(link, path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

bool print_stats_requested() {
  const char* v = std::getenv("UMAP_PRINT_STATS");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// Advice that leaves a mapping's contents as they are: a served mapping takes it as a no-op
// (MADV_WILLNEED as a prefetch). MADV_DONTNEED is one of them for a shared file mapping and a private
// read-only one; a private writable one loses its writes to it.
bool keeps_contents(int advice) {
  switch (advice) {
    case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED: case MADV_DONTNEED:
    case MADV_COLD: case MADV_PAGEOUT: case MADV_HUGEPAGE: case MADV_NOHUGEPAGE: case MADV_DONTDUMP:
    case MADV_DODUMP:
      return true;
    default:
      return false;
  }
}

// Calls `call(begin, length)` for each part of [begin, end) outside the sorted, disjoint `taken` ranges.
template <typename Call>
int for_each_gap(char* begin, char* end, std::vector<std::pair<char*, char*>> taken, Call call) {
  std::sort(taken.begin(), taken.end());
  int result = 0;
  char* at = begin;
  for (const auto& [from, to] : taken) {
    if (from > at && call(at, static_cast<std::size_t>(std::min(from, end) - at)) != 0 && result == 0) result = -1;
    at = std::max(at, to);
    if (at >= end) return result;
  }
  if (at < end && call(at, static_cast<std::size_t>(end - at)) != 0 && result == 0) result = -1;
  return result;
}

}  // namespace

bool ServedMappings::Served::writes_file() const { return shared && (prot & PROT_WRITE) != 0; }

ServedMappings& ServedMappings::instance() {
  static ServedMappings* table = new ServedMappings();
  return *table;
}

Pager* ServedMappings::pager_locked() {
  if (Pager* pager = pager_.load()) return pager;
  if (disabled_) return nullptr;
  try {
    Pager* pager = new Pager(Config::from_environment());  // lives until the process ends
    pager_.store(pager);
    // Registered after the pager's own handlers, so that before fork this one runs first (the pager
    // still whole) and in the child last (after the pager has dealt with its copy).
    pthread_atfork([] { instance().before_fork(); }, [] { instance().after_fork_in_parent(); },
                   [] { instance().after_fork_in_child(); });
    return pager;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autopager preload: the pager cannot start (%s); every mapping is left to the kernel\n",
                 e.what());
    disabled_ = true;
    return nullptr;
  }
}

bool ServedMappings::settings_locked() {
  if (disabled_) return false;
  if (!settings_read_) {
    settings_read_ = true;
    try {
      settings_ = Settings::from_environment();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "autopager preload: %s; every mapping is left to the kernel\n", e.what());
      disabled_ = true;
      return false;
    }
  }
  return true;
}

void* ServedMappings::mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
  auto kernel_mmap = [&] { return kernel().mmap(address, length, prot, flags, fd, offset); };
  const int type = flags & MAP_TYPE;
  const bool shared = type == MAP_SHARED;
  const bool writes = (prot & PROT_WRITE) != 0;
  const std::size_t page = system_page_size();
  if (fd < 0 || (type != MAP_SHARED && type != MAP_PRIVATE) ||
      (flags & ~(MAP_TYPE | MAP_NORESERVE | MAP_POPULATE)) != 0 || (prot != PROT_READ && prot != (PROT_READ | PROT_WRITE)) ||
      length == 0 || offset < 0 || static_cast<std::size_t>(offset) % page != 0)
    return kernel_mmap();
  struct stat file {};
  if (fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) return kernel_mmap();
  const int access = fcntl(fd, F_GETFL) & O_ACCMODE;
  if (access == O_WRONLY || (shared && writes && access != O_RDWR)) return kernel_mmap();  // the kernel refuses it
  const std::uint64_t end = static_cast<std::uint64_t>(offset) + length;
  // The copy-on-write store of a private writable mapping holds the file's bytes only, to the byte.
  const bool past_end = end > (shared ? round_up(static_cast<std::uint64_t>(file.st_size), page)
                                      : static_cast<std::uint64_t>(file.st_size));

  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_locked()) return kernel_mmap();
  if (static_cast<std::uint64_t>(file.st_size) < settings_.min_size) return kernel_mmap();
  const FileId id{file.st_dev, file.st_ino};
  if (kernel_files_.count(id) != 0) return kernel_mmap();
  std::string path = path_of(fd);
  if (!settings_.path_wanted(path)) return kernel_mmap();
  // Writes through a mapping past the end of the file would extend it or be lost (the kernel: SIGBUS);
  // and one writable mapping of a file beside another would not see the other's pages (the kernel's
  // share them).
  std::vector<Served*> same_file = of_file_locked(file);
  const bool conflict = !same_file.empty() && ((shared && writes) ||
      std::any_of(same_file.begin(), same_file.end(), [](const Served* s) { return s->writes_file(); }));
  if (conflict || (writes && past_end)) {
    for (Served* other : same_file) hand_over_locked(*other, "it is mapped again, and written through a mapping");
    kernel_files_.insert(id);
    return kernel_mmap();
  }
  Pager* pager = pager_locked();
  if (pager == nullptr) return kernel_mmap();

  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  int for_store = own < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (for_store < 0) {
    if (own >= 0) close(own);
    return kernel_mmap();
  }
  void* base = nullptr;
  bool direct_io = false;
  std::shared_ptr<python::CopyOnWriteStore> private_writes;
  try {
    FileStoreOptions options;
    options.writable = shared && writes;
    options.offset = static_cast<std::uint64_t>(offset);
    options.direct = pager->config().direct_io;
    std::shared_ptr<Store> store;
    try {
      store = make_fd_store(for_store, options, true);
    } catch (...) {
      close(for_store);
      throw;
    }
    if (!shared && writes) {
      const char* scratch = std::getenv("TMPDIR");
      private_writes = std::make_shared<python::CopyOnWriteStore>(std::move(store), scratch && *scratch ? scratch : "/tmp");
      store = private_writes;
    }
    direct_io = store->direct_io();
    base = pager->map(std::move(store), length, prot);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autopager preload: cannot serve %s (%s); left to the kernel\n", path.c_str(), e.what());
    close(own);
    return kernel_mmap();
  }
  Served served{static_cast<char*>(base), length, round_up(length, page), pager->mapped_length(base),
                own, id.first, id.second, offset, prot, shared, std::move(path), std::move(private_writes)};
  served_.emplace(reinterpret_cast<std::uintptr_t>(base), std::move(served));
  count_.fetch_add(1);
  if (shared && writes) writable_count_.fetch_add(1);
  ++served_total_;
  served_bytes_ += length;
  if (direct_io) ++served_direct_;
  return base;
}

std::vector<ServedMappings::Served*> ServedMappings::overlapping_locked(const char* begin, const char* end) {
  std::vector<Served*> found;
  auto it = served_.upper_bound(reinterpret_cast<std::uintptr_t>(begin));
  if (it != served_.begin()) --it;
  for (; it != served_.end() && it->second.base < end; ++it)
    if (it->second.base + it->second.mapped > begin) found.push_back(&it->second);
  return found;
}

bool ServedMappings::map_over_with_kernel(const Served& served) const {
  // The kernel's mapping covers the region's whole range first and is trimmed after: a range of huge pages
  // (huge_pages) can be replaced or cut only at huge-page boundaries, the span ends on any system page.
  const std::size_t whole = served.mapped;
  void* at;
  if (served.private_writes) {
    // The file (a heap mapping: zeros) mapped privately elsewhere, the pages written copied into it, then moved over the
    // range at once: no thread sees the file's bytes where it wrote its own.
    void* copy = served.fd < 0 ? kernel().mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : kernel().mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE, served.fd, served.offset);
    if (copy == MAP_FAILED) return false;
    for (const auto& [begin, end] : served.private_writes->written_ranges()) {
      const std::uint64_t stop = std::min<std::uint64_t>(end, served.span);
      if (begin < stop &&
          served.private_writes->read(static_cast<char*>(copy) + begin, stop - begin, begin) < 0) {
        kernel().munmap(copy, whole);
        return false;
      }
    }
    if (served.prot != (PROT_READ | PROT_WRITE)) kernel().mprotect(copy, whole, served.prot);
    at = kernel().mremap(copy, whole, whole, MREMAP_MAYMOVE | MREMAP_FIXED, served.base);
    if (at == MAP_FAILED) kernel().munmap(copy, whole);
  } else {
    at = kernel().mmap(served.base, whole, served.prot, (served.shared ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED,
                       served.fd, served.offset);
  }
  if (at == MAP_FAILED) return false;
  if (whole > served.span) kernel().munmap(served.base + served.span, whole - served.span);
  return true;
}

void ServedMappings::forget_locked(const Served& served) {
  if (served.fd >= 0) close(served.fd);
  if (served.writes_file()) writable_count_.fetch_sub(1);
  count_.fetch_sub(1);
  served_.erase(reinterpret_cast<std::uintptr_t>(served.base));
}

std::vector<ServedMappings::Served*> ServedMappings::of_file_locked(const struct stat& file) {
  std::vector<Served*> found;
  for (auto& entry : served_)
    if (entry.second.device == file.st_dev && entry.second.inode == file.st_ino) found.push_back(&entry.second);
  return found;
}

bool ServedMappings::hand_over_locked(Served& served, const char* why) {
  Pager* pager = pager_.load();
  // Its written pages go into the kernel's memory: a full scratch disk must not stop them on the way.
  if (served.private_writes) served.private_writes->keep_writes_in_memory_when_full();
  if (!pager->hand_over(served.base, [&] { return map_over_with_kernel(served); })) {
    const int error = errno;
    const bool stays = pager->region_base(served.base) == served.base;
    std::fprintf(stderr, "autopager preload: handing %s to the kernel (%s) failed: %s%s\n", served.path.c_str(), why,
                 std::strerror(error), stays ? "; the pager keeps serving it" : "");
    if (stays) {
      errno = error;
      return false;
    }
  }
  if (served.fd >= 0) kernel_files_.insert({served.device, served.inode});
  ++handed_over_;
  forget_locked(served);
  return true;
}

bool ServedMappings::may_concern_served(void* address, size_t length, char*& begin, char*& end) const {
  const std::size_t page = system_page_size();
  begin = static_cast<char*>(address);
  end = begin + round_up(length, page);
  return count_.load() != 0 && reinterpret_cast<std::uintptr_t>(begin) % page == 0 && length != 0;
}

int ServedMappings::munmap(void* address, size_t length) {
  char *begin, *end;
  if (!may_concern_served(address, length, begin, end)) return kernel().munmap(address, length);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<char*, char*>> released;
  int error = 0;
  for (Served* served : overlapping_locked(begin, end)) {
    if (served->base >= begin && served->base + served->span <= end) {
      char* base = served->base;
      std::size_t mapped = served->mapped;
      // A private writable mapping's writes (a heap mapping's) die with it: its dirty pages are dropped, not
      // written to a scratch file about to go.
      Pager* pager = pager_.load();
      if (served->private_writes ? pager->discard(base) : pager->unmap(base)) {
        forget_locked(*served);
      } else {  // its pages stay mapped, for a later munmap to write
        error = errno;
        std::fprintf(stderr, "autopager preload: writing back %s at munmap failed: %s; it stays mapped\n",
                     served->path.c_str(), std::strerror(error));
      }
      released.emplace_back(base, base + mapped);
    } else if (!hand_over_locked(*served, "part of it is unmapped")) {
      if (error == 0) error = errno;
      released.emplace_back(served->base, served->base + served->mapped);
    }
  }
  int result = for_each_gap(begin, end, released, [](char* at, std::size_t n) { return kernel().munmap(at, n); });
  if (error != 0) {
    errno = error;
    return -1;
  }
  return result;
}

int ServedMappings::msync(void* address, size_t length, int flags) {
  char *begin, *end;
  if (!may_concern_served(address, length, begin, end)) return kernel().msync(address, length, flags);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<char*, char*>> flushed;
  int error = 0;
  for (Served* served : overlapping_locked(begin, end)) {
    flushed.emplace_back(served->base, served->base + served->mapped);
    if (!served->writes_file()) continue;
    if (pager_.load()->flush(served->base) != 0 || ((flags & MS_SYNC) != 0 && fdatasync(served->fd) != 0)) {
      if (error == 0) error = errno;
    }
  }
  int result = for_each_gap(begin, end, flushed, [&](char* at, std::size_t n) { return kernel().msync(at, n, flags); });
  if (error != 0) {
    errno = error;
    return -1;
  }
  return result;
}

int ServedMappings::mprotect(void* address, size_t length, int prot) {
  char *begin, *end;
  if (may_concern_served(address, length, begin, end)) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Served* served : overlapping_locked(begin, end))
      if (served->prot != prot) hand_over_locked(*served, "its protection changes");
  }
  return kernel().mprotect(address, length, prot);
}

int ServedMappings::madvise(void* address, size_t length, int advice) {
  char *begin, *end;
  if (!may_concern_served(address, length, begin, end)) return kernel().madvise(address, length, advice);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<char*, char*>> kept;
  for (Served* served : overlapping_locked(begin, end)) {
    // MADV_DONTNEED drops a private mapping's own writes.
    if (!keeps_contents(advice) || (advice == MADV_DONTNEED && served->private_writes)) {
      // Kept by the pager, its pages must not be dropped under it: the advice is not taken.
      if (!hand_over_locked(*served, "advice that changes its contents"))
        kept.emplace_back(served->base, served->base + served->mapped);
      continue;
    }
    kept.emplace_back(served->base, served->base + served->mapped);
    if (advice != MADV_WILLNEED) continue;
    Pager* pager = pager_.load();
    const std::size_t pager_page = pager->config().page_size;
    char* first = std::max(begin, served->base);
    char* last = std::min(end, served->base + served->span);
    std::vector<void*> pages;
    for (char* at = first; at < last && pages.size() < pager->config().buffer_pages; at += pager_page) pages.push_back(at);
    pager->prefetch(pages.data(), pages.size());
  }
  return for_each_gap(begin, end, kept, [&](char* at, std::size_t n) { return kernel().madvise(at, n, advice); });
}

bool ServedMappings::hand_over_all_locked(const char* begin, const char* end, const char* why) {
  int error = 0;
  for (Served* served : overlapping_locked(begin, end))
    if (!hand_over_locked(*served, why) && error == 0) error = errno;
  if (error != 0) errno = error;
  return error == 0;
}

bool ServedMappings::before_remap(void* address) {
  if (count_.load() == 0) return true;
  const char* at = static_cast<char*>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  return hand_over_all_locked(at, at + 1, "it is remapped");
}

bool ServedMappings::before_fixed(void* address, size_t length) {
  char *begin, *end;
  if (!may_concern_served(address, length, begin, end)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return hand_over_all_locked(begin, end, "a mapping with MAP_FIXED replaces it");
}

void ServedMappings::hand_over_file(const struct stat& file, const char* why) {
  if (!S_ISREG(file.st_mode)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Served* served : of_file_locked(file)) hand_over_locked(*served, why);
}

void ServedMappings::before_write(int fd, const char* why) {
  struct stat file {};
  if (count_.load() != 0 && fstat(fd, &file) == 0) hand_over_file(file, why);
}

void ServedMappings::before_truncate(int dirfd, const char* path, int at_flags, const char* why) {
  struct stat file {};
  if (count_.load() != 0 && path != nullptr && fstatat(dirfd, path, &file, at_flags) == 0) hand_over_file(file, why);
}

void ServedMappings::before_read(int fd) {
  struct stat file {};
  if (writable_count_.load() == 0 || fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Served* served : of_file_locked(file))
    if (served->writes_file()) hand_over_locked(*served, "its file is read with read() while written through the map");
}

int ServedMappings::before_sync(int fd) {
  struct stat file {};
  if (writable_count_.load() == 0 || fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  int error = 0;
  for (Served* served : of_file_locked(file)) {
    if (!served->writes_file() || pager_.load()->flush(served->base) == 0) continue;
    if (error == 0) error = errno;
    std::fprintf(stderr, "autopager preload: writing back %s at fsync failed: %s\n", served->path.c_str(),
                 std::strerror(errno));
  }
  return error;
}

void ServedMappings::flush_locked(const char* when) {
  for (auto& entry : served_) {
    Served& served = entry.second;
    if (served.writes_file() && pager_.load()->flush(served.base) != 0)
      std::fprintf(stderr, "autopager preload: writing back %s %s failed: %s\n", served.path.c_str(), when,
                   std::strerror(errno));
  }
}

void ServedMappings::before_exit() {
  if (writable_count_.load() == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked("at _exit");
}

void ServedMappings::before_spawn() {
  if (writable_count_.load() == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked("before a child process starts");
}

// A private writable mapping goes to the kernel before fork, so that the child gets a copy of it as it
// is, as the kernel's fork gives.
void ServedMappings::before_fork() {
  mutex_.lock();
  std::vector<Served*> private_writable;
  for (auto& entry : served_)
    if (entry.second.private_writes) private_writable.push_back(&entry.second);
  for (Served* served : private_writable) hand_over_locked(*served, "the process forks");
  flush_locked("before fork");
}

void ServedMappings::after_fork_in_parent() { mutex_.unlock(); }

// The child has no pager threads: each served mapping becomes a kernel mapping of its file, which
// before_fork() brought up to date, and the child maps everything with the kernel from now on.
void ServedMappings::after_fork_in_child() {
  for (auto& entry : served_) {
    const Served& served = entry.second;
    if (served.private_writes) {
      // Its hand-over before fork failed: dirty pages the store never got would read as older bytes here.
      std::fprintf(stderr, "autopager preload: in a forked child, %s is not mapped (it could not be handed to the "
                   "kernel before fork): a touch is SIGSEGV\n", served.path.c_str());
    } else if (!map_over_with_kernel(served)) {
      std::fprintf(stderr, "autopager preload: in a forked child, mapping %s with the kernel failed: %s\n",
                   served.path.c_str(), std::strerror(errno));
    }
    if (served.fd >= 0) close(served.fd);
  }
  served_.clear();
  served_bytes_ = 0;
  count_.store(0);
  writable_count_.store(0);
  disabled_ = true;
  mutex_.unlock();
}

std::string ServedMappings::stats_json() const {
  Pager* pager = pager_.load();
  return pager == nullptr ? std::string() : pager->stats().to_json();
}

void ServedMappings::print_summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (print_stats_requested()) {
    std::fprintf(stderr,
                 "autopager preload: served %llu file mappings (%zu still mapped, %llu with O_DIRECT), handed %llu to "
                 "the kernel\n",
                 static_cast<unsigned long long>(served_total_), served_.size(),
                 static_cast<unsigned long long>(served_direct_), static_cast<unsigned long long>(handed_over_));
    print_heap_summary_locked();
  }
  print_read_amplification_locked();
}

// Said whether or not statistics were asked for: a program that reads its mappings many times over through the
// pager runs slower than on the kernel's page cache, and the statistics alone do not say why.
void ServedMappings::print_read_amplification_locked() const {
  constexpr double kMany = 4.0;  // as the tuner's summary (outcome.READ_AMPLIFICATION)
  Pager* pager = pager_.load();
  if (pager == nullptr || served_bytes_ == 0) return;
  const Stats stats = pager->stats();
  const double times = static_cast<double>(stats.bytes_read) / static_cast<double>(served_bytes_);
  if (times < kMany) return;
  std::fprintf(stderr,
               "autopager preload: read %.1f MiB through the pager, %.1fx the %.1f MiB it served: pages too large or "
               "buffer too small for random access (page_size %llu KiB, buffer %llu MiB; try a smaller page_size or "
               "a larger buffer_size, or `autopager tune`)\n",
               static_cast<double>(stats.bytes_read) / (1 << 20), times,
               static_cast<double>(served_bytes_) / (1 << 20), static_cast<unsigned long long>(stats.page_size >> 10),
               static_cast<unsigned long long>(pager->config().buffer_bytes() >> 20));
}

}  // namespace autopager::preload
