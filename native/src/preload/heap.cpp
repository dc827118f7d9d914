// The heap extension (docs/TRANSPARENT.md, DESIGN.md "Heap mappings"): with UMAP_PRELOAD_HEAP set,
// a private anonymous readable and writable mapping of at least UMAP_PRELOAD_HEAP_MIN bytes (malloc's
// large blocks, numpy's arrays) is served by the pager from a copy-on-write store over zeros: a page
// never written is zeros without any read, a written one goes to an unlinked scratch file in the
// directory when evicted. Everything else the table does to a private writable file mapping (a partial
// munmap, mprotect, mremap, contents-changing advice, fork: handed to the kernel with its written pages
// copied in) holds for it unchanged, the kernel's mapping being anonymous memory instead of the file.
#include <sys/mman.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "autopager/config.hpp"
#include "kernel.hpp"
#include "served.hpp"

namespace autopager::preload {
namespace {

// What an anonymous mapping holds before it is written: zeros, without any I/O.
class ZeroStore : public Store {
 public:
  explicit ZeroStore(std::uint64_t size) : size_(size) {}
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    const std::size_t in_store = offset >= size_ ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    std::memset(dst, 0, in_store);
    return static_cast<ssize_t>(in_store);
  }
  ssize_t write(const void*, std::size_t, std::uint64_t) override {
    errno = EROFS;  // the copy-on-write store over it never writes it
    return -1;
  }
  std::uint64_t size() const override { return size_; }
  bool writable() const override { return false; }
  bool outlives_process() const override { return false; }

 private:
  std::uint64_t size_;
};

std::size_t round_up(std::size_t n, std::size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

bool ServedMappings::heap_has_room_locked(std::size_t span) {
  struct statvfs space {};
  if (statvfs(settings_.heap_dir.c_str(), &space) != 0) return true;  // the store's creation then says why
  std::uint64_t wanted = span;
  for (const auto& entry : served_)
    if (entry.second.fd < 0) wanted += entry.second.span;  // counted whole: what it may yet write
  return static_cast<std::uint64_t>(space.f_bavail) * space.f_frsize >= wanted;
}

std::uint64_t ServedMappings::heap_threshold() {
  if (std::uint64_t threshold = heap_threshold_.load(std::memory_order_acquire)) return threshold;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t threshold = settings_locked() && !settings_.heap_dir.empty() ? settings_.heap_min : UINT64_MAX;
  heap_threshold_.store(threshold, std::memory_order_release);
  return threshold;
}

void* ServedMappings::mmap_anonymous(void* address, size_t length, int prot, int flags) {
  auto kernel_mmap = [&] { return kernel().mmap(address, length, prot, flags, -1, 0); };
  // Only what a heap block is: private, readable and writable, no placement and no special kind
  // (MAP_STACK, MAP_GROWSDOWN, MAP_HUGETLB, MAP_LOCKED, MAP_POPULATE stay with the kernel).
  if ((flags & MAP_TYPE) != MAP_PRIVATE || (flags & ~(MAP_TYPE | MAP_ANONYMOUS | MAP_NORESERVE)) != 0 ||
      prot != (PROT_READ | PROT_WRITE) || length == 0)
    return kernel_mmap();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_locked() || settings_.heap_dir.empty() || length < settings_.heap_min) return kernel_mmap();
  const std::size_t span = round_up(length, system_page_size());
  if (!heap_has_room_locked(span)) {
    if (heap_refused_++ == 0)
      std::fprintf(stderr, "autopager preload: the heap's directory %s has no room for %zu more bytes; such mappings "
                   "are left to the kernel's memory\n", settings_.heap_dir.c_str(), span);
    return kernel_mmap();
  }
  Pager* pager = pager_locked();
  if (pager == nullptr) return kernel_mmap();
  std::shared_ptr<python::CopyOnWriteStore> store;
  void* base = nullptr;
  try {
    store = std::make_shared<python::CopyOnWriteStore>(std::make_shared<ZeroStore>(span), settings_.heap_dir,
                                                       python::CopyOnWriteStore::WhenFull::kFail);
    base = pager->map(store, length, prot);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autopager preload: cannot serve an anonymous mapping of %zu bytes from %s (%s); left to the "
                 "kernel\n", length, settings_.heap_dir.c_str(), e.what());
    return kernel_mmap();
  }
  Served served{static_cast<char*>(base), length, span, pager->mapped_length(base), -1, 0, 0, 0, prot, false,
                "an anonymous mapping", std::move(store)};
  served_.emplace(reinterpret_cast<std::uintptr_t>(base), std::move(served));
  count_.fetch_add(1);
  ++heap_served_;
  served_bytes_ += length;
  return base;
}

void ServedMappings::print_heap_summary_locked() const {
  if (heap_served_ == 0 && heap_refused_ == 0) return;
  std::fprintf(stderr, "autopager preload: served %llu anonymous mappings from %s, left %llu to the kernel for want of "
               "room there\n", static_cast<unsigned long long>(heap_served_), settings_.heap_dir.c_str(),
               static_cast<unsigned long long>(heap_refused_));
}

}  // namespace autopager::preload
