#include "heap_blocks.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "autopager/config.hpp"
#include "served.hpp"

namespace autopager::preload {
namespace {

constexpr std::size_t kMinimumOffset = 16;  // malloc's alignment

std::size_t glibc_usable_size(void* pointer) {
  using UsableSize = size_t (*)(void*);
  static UsableSize next = reinterpret_cast<UsableSize>(dlsym(RTLD_NEXT, "malloc_usable_size"));
  return next == nullptr ? 0 : next(pointer);
}

}  // namespace

HeapBlocks& HeapBlocks::instance() {
  static HeapBlocks* blocks = [] {
    auto* made = new HeapBlocks();
    // A fork while another thread holds the table must not leave the child's copy locked for good.
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] { instance().mutex_.unlock(); });
    return made;
  }();
  return *blocks;
}

void* HeapBlocks::map_block(std::size_t size, std::size_t alignment) {
  const std::size_t offset = std::max(kMinimumOffset, alignment);
  if (size > SIZE_MAX - offset) {
    errno = ENOMEM;
    return nullptr;
  }
  const std::size_t length = size + offset;
  void* base = ServedMappings::instance().mmap_anonymous(nullptr, length, PROT_READ | PROT_WRITE,
                                                         MAP_PRIVATE | MAP_ANONYMOUS);
  if (base == MAP_FAILED) {
    errno = ENOMEM;
    return nullptr;
  }
  char* pointer = static_cast<char*>(base) + offset;
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_.emplace(reinterpret_cast<std::uintptr_t>(pointer), Block{static_cast<char*>(base), length, offset});
  const auto begin = reinterpret_cast<std::uintptr_t>(base);
  if (begin < lowest_.load()) lowest_.store(begin);
  if (begin + length > highest_.load()) highest_.store(begin + length);
  return pointer;
}

void* HeapBlocks::allocate(std::size_t size, std::size_t alignment, bool zeroed) {
  // An alignment above the page: the mapping's own would not give it.
  if (size >= ServedMappings::instance().heap_threshold() && alignment <= system_page_size())
    return map_block(size, alignment);  // a new mapping is zeros
  if (alignment > kMinimumOffset) return __libc_memalign(alignment, size);
  return zeroed ? __libc_calloc(1, size) : __libc_malloc(size);
}

bool HeapBlocks::find(void* pointer, Block& block, bool take) {
  const auto at = reinterpret_cast<std::uintptr_t>(pointer);
  if (at < lowest_.load() || at >= highest_.load()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(at);
  if (it == blocks_.end()) return false;
  block = it->second;
  if (take) blocks_.erase(it);
  return true;
}

void* HeapBlocks::reallocate(void* pointer, std::size_t size) {
  if (pointer == nullptr) return allocate(size, kMinimumOffset, false);
  Block block{};
  const bool ours = find(pointer, block, false);
  if (ours && size <= block.length - block.offset) return pointer;  // it fits already
  if (!ours && size < ServedMappings::instance().heap_threshold()) return __libc_realloc(pointer, size);
  void* moved = allocate(size, kMinimumOffset, false);
  if (moved == nullptr) return nullptr;  // the old block stays, as realloc() promises
  std::memcpy(moved, pointer, std::min(size, ours ? block.length - block.offset : glibc_usable_size(pointer)));
  release(pointer);
  return moved;
}

void HeapBlocks::release(void* pointer) {
  Block block{};
  if (!find(pointer, block, true)) return __libc_free(pointer);
  ServedMappings::instance().munmap(block.base, block.length);
}

std::size_t HeapBlocks::usable_size(void* pointer) {
  Block block{};
  if (pointer != nullptr && find(pointer, block, false)) return block.length - block.offset;
  return glibc_usable_size(pointer);
}

}  // namespace autopager::preload
