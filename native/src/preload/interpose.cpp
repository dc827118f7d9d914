// The preloaded definitions of the C library's memory, read, write and sync calls, and _exit. Each goes to the kernel unless
// it concerns a served file mapping (served.hpp). A thread already inside the preload (the pager's
// start-up, a library the preload calls) goes straight to the kernel.
#include <sys/mman.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "heap_blocks.hpp"
#include "kernel.hpp"
#include "served.hpp"

using autopager::preload::HeapBlocks;
using autopager::preload::kernel;
using autopager::preload::ServedMappings;

namespace {

__attribute__((tls_model("initial-exec"))) thread_local bool inside = false;

struct Inside {
  Inside() { inside = true; }
  ~Inside() { inside = false; }
};

ServedMappings& table() { return ServedMappings::instance(); }

void written(int fd) {
  if (inside) return;
  Inside guard;
  table().before_write(fd);
}

void read_from(int fd) {
  if (inside) return;
  Inside guard;
  table().before_read(fd);
}

__attribute__((constructor(102))) void install() { std::atexit([] { table().print_summary(); }); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* mmap(void* address, size_t length, int prot, int flags, int fd,
                                                  off_t offset) {
  if (inside) return kernel().mmap(address, length, prot, flags, fd, offset);
  Inside guard;
  if ((flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) == MAP_FIXED && !table().before_fixed(address, length))
    return MAP_FAILED;
  if ((flags & MAP_ANONYMOUS) != 0) return table().mmap_anonymous(address, length, prot, flags);
  if (fd < 0) return kernel().mmap(address, length, prot, flags, fd, offset);
  return table().mmap(address, length, prot, flags, fd, offset);
}

__attribute__((visibility("default"))) void* mmap64(void* address, size_t length, int prot, int flags, int fd,
                                                    off_t offset) {
  return mmap(address, length, prot, flags, fd, offset);
}

__attribute__((visibility("default"))) int munmap(void* address, size_t length) {
  if (inside) return kernel().munmap(address, length);
  Inside guard;
  return table().munmap(address, length);
}

__attribute__((visibility("default"))) int msync(void* address, size_t length, int flags) {
  if (inside) return kernel().msync(address, length, flags);
  Inside guard;
  return table().msync(address, length, flags);
}

__attribute__((visibility("default"))) int mprotect(void* address, size_t length, int prot) {
  if (inside) return kernel().mprotect(address, length, prot);
  Inside guard;
  return table().mprotect(address, length, prot);
}

__attribute__((visibility("default"))) int madvise(void* address, size_t length, int advice) {
  if (inside) return kernel().madvise(address, length, advice);
  Inside guard;
  return table().madvise(address, length, advice);
}

__attribute__((visibility("default"))) void* mremap(void* address, size_t old_length, size_t new_length, int flags,
                                                    ...) {
  void* new_address = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list args;
    va_start(args, flags);
    new_address = va_arg(args, void*);
    va_end(args);
  }
  if (!inside) {
    Inside guard;
    if (!table().before_remap(address)) return MAP_FAILED;
    if ((flags & MREMAP_FIXED) != 0 && !table().before_fixed(new_address, new_length)) return MAP_FAILED;
  }
  return kernel().mremap(address, old_length, new_length, flags, new_address);
}

// malloc and the rest (heap_blocks.hpp): glibc's, but for the large blocks of a heap that is on.
__attribute__((visibility("default"))) void* malloc(size_t size) {
  if (inside) return __libc_malloc(size);
  Inside guard;
  return HeapBlocks::instance().allocate(size, 16, false);
}

__attribute__((visibility("default"))) void* calloc(size_t count, size_t size) {
  if (inside) return __libc_calloc(count, size);
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  Inside guard;
  return HeapBlocks::instance().allocate(bytes, 16, true);
}

__attribute__((visibility("default"))) void* realloc(void* pointer, size_t size) {
  if (inside) return __libc_realloc(pointer, size);
  Inside guard;
  return HeapBlocks::instance().reallocate(pointer, size);
}

__attribute__((visibility("default"))) void* reallocarray(void* pointer, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(pointer, bytes);
}

__attribute__((visibility("default"))) void free(void* pointer) {
  if (pointer == nullptr) return;
  if (inside) return __libc_free(pointer);
  Inside guard;
  HeapBlocks::instance().release(pointer);
}

__attribute__((visibility("default"))) void* memalign(size_t alignment, size_t size) {
  if (inside) return __libc_memalign(alignment, size);
  Inside guard;
  return HeapBlocks::instance().allocate(size, alignment, false);
}

__attribute__((visibility("default"))) void* aligned_alloc(size_t alignment, size_t size) {
  return memalign(alignment, size);
}

__attribute__((visibility("default"))) int posix_memalign(void** result, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* pointer = memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *result = pointer;
  return 0;
}

__attribute__((visibility("default"))) void* valloc(size_t size) { return memalign(sysconf(_SC_PAGESIZE), size); }

__attribute__((visibility("default"))) void* pvalloc(size_t size) {
  const size_t page = sysconf(_SC_PAGESIZE);
  return memalign(page, (size + page - 1) / page * page);
}

__attribute__((visibility("default"))) size_t malloc_usable_size(void* pointer) {
  Inside guard;
  return HeapBlocks::instance().usable_size(pointer);
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void* data, size_t n) {
  written(fd);
  return kernel().write(fd, data, n);
}

__attribute__((visibility("default"))) ssize_t pwrite(int fd, const void* data, size_t n, off_t offset) {
  written(fd);
  return kernel().pwrite(fd, data, n, offset);
}

__attribute__((visibility("default"))) ssize_t pwrite64(int fd, const void* data, size_t n, off_t offset) {
  return pwrite(fd, data, n, offset);
}

__attribute__((visibility("default"))) ssize_t writev(int fd, const iovec* parts, int count) {
  written(fd);
  return kernel().writev(fd, parts, count);
}

__attribute__((visibility("default"))) ssize_t pwritev(int fd, const iovec* parts, int count, off_t offset) {
  written(fd);
  return kernel().pwritev(fd, parts, count, offset);
}

__attribute__((visibility("default"))) ssize_t pwritev64(int fd, const iovec* parts, int count, off_t offset) {
  return pwritev(fd, parts, count, offset);
}

__attribute__((visibility("default"))) ssize_t pwritev2(int fd, const iovec* parts, int count, off_t offset,
                                                       int flags) {
  written(fd);
  return kernel().pwritev2(fd, parts, count, offset, flags);
}

__attribute__((visibility("default"))) ssize_t pwritev64v2(int fd, const iovec* parts, int count, off_t offset,
                                                          int flags) {
  return pwritev2(fd, parts, count, offset, flags);
}

__attribute__((visibility("default"))) int ftruncate(int fd, off_t length) {
  written(fd);
  return kernel().ftruncate(fd, length);
}

__attribute__((visibility("default"))) int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

__attribute__((visibility("default"))) ssize_t read(int fd, void* data, size_t n) {
  read_from(fd);
  return kernel().read(fd, data, n);
}

__attribute__((visibility("default"))) ssize_t pread(int fd, void* data, size_t n, off_t offset) {
  read_from(fd);
  return kernel().pread(fd, data, n, offset);
}

__attribute__((visibility("default"))) ssize_t pread64(int fd, void* data, size_t n, off_t offset) {
  return pread(fd, data, n, offset);
}

__attribute__((visibility("default"))) ssize_t readv(int fd, const iovec* parts, int count) {
  read_from(fd);
  return kernel().readv(fd, parts, count);
}

__attribute__((visibility("default"))) ssize_t preadv(int fd, const iovec* parts, int count, off_t offset) {
  read_from(fd);
  return kernel().preadv(fd, parts, count, offset);
}

__attribute__((visibility("default"))) ssize_t preadv64(int fd, const iovec* parts, int count, off_t offset) {
  return preadv(fd, parts, count, offset);
}

__attribute__((visibility("default"))) ssize_t preadv2(int fd, const iovec* parts, int count, off_t offset, int flags) {
  read_from(fd);
  return kernel().preadv2(fd, parts, count, offset, flags);
}

__attribute__((visibility("default"))) ssize_t preadv64v2(int fd, const iovec* parts, int count, off_t offset,
                                                         int flags) {
  return preadv2(fd, parts, count, offset, flags);
}

__attribute__((visibility("default"))) int fsync(int fd) {
  int error = 0;
  if (!inside) {
    Inside guard;
    error = table().before_sync(fd);
  }
  int result = kernel().fsync(fd);
  if (error == 0) return result;
  errno = error;
  return -1;
}

__attribute__((visibility("default"))) int fdatasync(int fd) {
  int error = 0;
  if (!inside) {
    Inside guard;
    error = table().before_sync(fd);
  }
  int result = kernel().fdatasync(fd);
  if (error == 0) return result;
  errno = error;
  return -1;
}

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (!inside) {
    Inside guard;
    table().before_exit();
  }
  kernel().exit(status);
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { _exit(status); }

// The pager's statistics as JSON into `buffer`: its length, or -1 when nothing was served yet. A
// program looks it up with dlsym(RTLD_DEFAULT, "autopager_preload_stats") to report them.
__attribute__((visibility("default"))) int autopager_preload_stats(char* buffer, size_t size) {
  std::string json = table().stats_json();
  if (json.empty()) return -1;
  std::snprintf(buffer, size, "%s", json.c_str());
  return static_cast<int>(json.size());
}

}  // extern "C"
