// malloc's large blocks as heap mappings (heap.cpp): with the heap on, a block of at least
// UMAP_PRELOAD_HEAP_MIN bytes is an anonymous mapping of its own, served by the pager, instead of glibc's
// (whose own mmap() of a large block is internal to the C library and never reaches the preload). Every
// other block is glibc's (__libc_malloc and the rest). A block here is [base, base + length) with the
// program's bytes from base + offset (offset: 16, or the alignment asked); free() unmaps it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

// glibc's own allocator, past the preload's definitions.
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace autopager::preload {

class HeapBlocks {
 public:
  static HeapBlocks& instance();  // never destroyed (free() may come during exit)

  // A block of `size` bytes aligned to `alignment` (a power of two), zero-filled: from a heap mapping
  // when the heap is on and `size` reaches its threshold, else glibc's (`zeroed`: calloc's).
  void* allocate(std::size_t size, std::size_t alignment, bool zeroed);
  // realloc(): a block of this table grows into a new one (its bytes copied); a glibc block growing to the
  // threshold becomes one of this table.
  void* reallocate(void* pointer, std::size_t size);
  // free(): unmaps a block of this table, else gives it to glibc.
  void release(void* pointer);
  // malloc_usable_size().
  std::size_t usable_size(void* pointer);

 private:
  struct Block {
    char* base;
    std::size_t length;
    std::size_t offset;
  };
  // The block whose program bytes start at `pointer`, taken out of the table when `take`.
  bool find(void* pointer, Block& block, bool take);
  void* map_block(std::size_t size, std::size_t alignment);

  std::mutex mutex_;
  std::map<std::uintptr_t, Block> blocks_;  // by the program's pointer
  // Every block lies in [lowest_, highest_): a pointer outside is glibc's without taking mutex_.
  std::atomic<std::uintptr_t> lowest_{UINTPTR_MAX};
  std::atomic<std::uintptr_t> highest_{0};
};

}  // namespace autopager::preload
