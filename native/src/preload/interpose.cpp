// The preloaded definitions of the C library's memory, read, write, truncate and sync calls, its process
// starts other than fork, and _exit. Each goes to the kernel unless it concerns a served file mapping
// (served.hpp). A thread already inside the preload (the pager's start-up, a library the preload calls) goes
// straight to the kernel.
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

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

constexpr const char* kWritten = "its file is written with write()";

void written(int fd, const char* why = kWritten) {
  if (inside) return;
  Inside guard;
  table().before_write(fd, why);
}

void truncated(int dirfd, const char* path, int at_flags) {
  if (inside) return;
  Inside guard;
  table().before_truncate(dirfd, path, at_flags, "its file is truncated");
}

void opened(int dirfd, const char* path, int flags) {
  if ((flags & O_TRUNC) != 0) truncated(dirfd, path, (flags & O_NOFOLLOW) != 0 ? AT_SYMLINK_NOFOLLOW : 0);
}

void spawning() {
  if (inside) return;
  Inside guard;
  table().before_spawn();
}

// Calls exec(argv, envp) with `first` and the arguments in `args` up to their null pointer as argv, and
// the environment after them (`with_environment`, execle) or the process's.
template <typename Exec>
int exec_listed(const char* first, va_list args, bool with_environment, Exec exec) {
  va_list counting;
  va_copy(counting, args);
  std::size_t count = 0;
  while (va_arg(counting, char*) != nullptr) ++count;
  va_end(counting);
  char** argv = static_cast<char**>(__builtin_alloca((count + 2) * sizeof(char*)));
  argv[0] = const_cast<char*>(first);
  for (std::size_t i = 1; i <= count + 1; ++i) argv[i] = va_arg(args, char*);
  return exec(argv, with_environment ? va_arg(args, char**) : environ);
}

mode_t mode_argument(int flags, va_list args) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(args, mode_t) : 0;
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
  written(fd, "its file is truncated");
  return kernel().ftruncate(fd, length);
}

__attribute__((visibility("default"))) int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

__attribute__((visibility("default"))) int truncate(const char* path, off_t length) {
  truncated(AT_FDCWD, path, 0);
  return kernel().truncate(path, length);
}

__attribute__((visibility("default"))) int truncate64(const char* path, off_t length) { return truncate(path, length); }

// Allocating blocks (mode 0, FALLOC_FL_KEEP_SIZE) leaves the contents as they are; punching a hole, zeroing,
// collapsing or inserting a range changes them under the mapping.
__attribute__((visibility("default"))) int fallocate(int fd, int mode, off_t offset, off_t length) {
  if ((mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_UNSHARE_RANGE)) != 0)
    written(fd, "its file's contents change with fallocate()");
  return kernel().fallocate(fd, mode, offset, length);
}

__attribute__((visibility("default"))) int fallocate64(int fd, int mode, off_t offset, off_t length) {
  return fallocate(fd, mode, offset, length);
}

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  opened(AT_FDCWD, path, flags);
  return kernel().open(path, flags, mode);
}

__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return open(path, flags, mode);
}

// What _FORTIFY_SOURCE compiles open() without a mode to.
__attribute__((visibility("default"))) int __open_2(const char* path, int flags) { return open(path, flags); }
__attribute__((visibility("default"))) int __open64_2(const char* path, int flags) { return open(path, flags); }

__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  opened(dirfd, path, flags);
  return kernel().openat(dirfd, path, flags, mode);
}

__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  return openat(dirfd, path, flags, mode);
}

__attribute__((visibility("default"))) int __openat_2(int dirfd, const char* path, int flags) {
  return openat(dirfd, path, flags);
}
__attribute__((visibility("default"))) int __openat64_2(int dirfd, const char* path, int flags) {
  return openat(dirfd, path, flags);
}

__attribute__((visibility("default"))) int creat(const char* path, mode_t mode) {
  return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
__attribute__((visibility("default"))) int creat64(const char* path, mode_t mode) { return creat(path, mode); }

// The C library opens fopen's files with its own open, which the preload does not see.
__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  if (mode != nullptr && mode[0] == 'w') truncated(AT_FDCWD, path, 0);
  return kernel().fopen(path, mode);
}
__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) { return fopen(path, mode); }

__attribute__((visibility("default"))) FILE* freopen(const char* path, const char* mode, FILE* stream) {
  if (mode != nullptr && mode[0] == 'w') {
    if (path != nullptr)
      truncated(AT_FDCWD, path, 0);
    else if (stream != nullptr)
      written(fileno(stream), "its file is truncated");
  }
  return kernel().freopen(path, mode, stream);
}
__attribute__((visibility("default"))) FILE* freopen64(const char* path, const char* mode, FILE* stream) {
  return freopen(path, mode, stream);
}

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

// A child started without fork() gets no atfork handler: the writes through served mappings reach the files
// before it starts, so that it reads them (system and popen start theirs with the C library's own spawn).
__attribute__((visibility("default"))) int posix_spawn(pid_t* pid, const char* path,
                                                       const posix_spawn_file_actions_t* actions,
                                                       const posix_spawnattr_t* attributes, char* const argv[],
                                                       char* const envp[]) {
  spawning();
  return kernel().posix_spawn(pid, path, actions, attributes, argv, envp);
}

__attribute__((visibility("default"))) int posix_spawnp(pid_t* pid, const char* file,
                                                        const posix_spawn_file_actions_t* actions,
                                                        const posix_spawnattr_t* attributes, char* const argv[],
                                                        char* const envp[]) {
  spawning();
  return kernel().posix_spawnp(pid, file, actions, attributes, argv, envp);
}

__attribute__((visibility("default"))) int system(const char* command) {
  spawning();
  return kernel().system(command);
}

__attribute__((visibility("default"))) FILE* popen(const char* command, const char* mode) {
  spawning();
  return kernel().popen(command, mode);
}

// The process's own memory ends with an exec: its writes reach the files first, as the kernel's page cache
// keeps them. (execv, execvp, execl... call the C library's own execve.)
__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  spawning();
  return kernel().execve(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  spawning();
  return kernel().execvpe(file, argv, envp);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  spawning();
  return kernel().fexecve(fd, argv, envp);
}

// execl, execlp and execle: their arguments put in an array on the stack (no allocation: an exec may follow
// vfork), for the array calls above.
__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = exec_listed(arg, args, false, [&](char** argv, char** envp) { return execve(path, argv, envp); });
  va_end(args);
  return result;
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = exec_listed(arg, args, false, [&](char** argv, char** envp) { return execvpe(file, argv, envp); });
  va_end(args);
  return result;
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = exec_listed(arg, args, true, [&](char** argv, char** envp) { return execve(path, argv, envp); });
  va_end(args);
  return result;
}

// vfork (Python's subprocess uses it) returns twice from one stack frame, the child's first: a C function
// around it would return into a frame the child has since overwritten. vfork below writes back first,
// then jumps to the C library's vfork with the caller's own return address on the stack.
__attribute__((visibility("hidden"), used)) void* autopager_before_vfork() {
  spawning();
  return reinterpret_cast<void*>(autopager::preload::next_vfork());
}

}  // extern "C"

#if defined(__x86_64__)
asm(R"(
    .text
    .globl vfork
    .type vfork, @function
vfork:
    .cfi_startproc
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call autopager_before_vfork
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork
)");
#endif

extern "C" {

// The pager's statistics as JSON into `buffer`: its length, or -1 when nothing was served yet. A
// program looks it up with dlsym(RTLD_DEFAULT, "autopager_preload_stats") to report them.
__attribute__((visibility("default"))) int autopager_preload_stats(char* buffer, size_t size) {
  std::string json = table().stats_json();
  if (json.empty()) return -1;
  std::snprintf(buffer, size, "%s", json.c_str());
  return static_cast<int>(json.size());
}

}  // extern "C"
