#include "kernel.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>

namespace autopager::preload {
namespace {

void* sys_mmap(void* a, size_t n, int p, int f, int fd, off_t o) {
  return reinterpret_cast<void*>(syscall(SYS_mmap, a, n, p, f, fd, o));
}
int sys_munmap(void* a, size_t n) { return static_cast<int>(syscall(SYS_munmap, a, n)); }
int sys_mprotect(void* a, size_t n, int p) { return static_cast<int>(syscall(SYS_mprotect, a, n, p)); }
int sys_madvise(void* a, size_t n, int advice) { return static_cast<int>(syscall(SYS_madvise, a, n, advice)); }
int sys_msync(void* a, size_t n, int f) { return static_cast<int>(syscall(SYS_msync, a, n, f)); }
void* sys_mremap(void* a, size_t old_n, size_t new_n, int f, ...) {
  va_list args;
  va_start(args, f);
  void* to = (f & MREMAP_FIXED) ? va_arg(args, void*) : nullptr;
  va_end(args);
  return reinterpret_cast<void*>(syscall(SYS_mremap, a, old_n, new_n, f, to));
}
ssize_t sys_write(int fd, const void* b, size_t n) { return syscall(SYS_write, fd, b, n); }
ssize_t sys_pwrite(int fd, const void* b, size_t n, off_t o) { return syscall(SYS_pwrite64, fd, b, n, o); }
ssize_t sys_writev(int fd, const iovec* v, int c) { return syscall(SYS_writev, fd, v, c); }
ssize_t sys_pwritev(int fd, const iovec* v, int c, off_t o) { return syscall(SYS_pwritev, fd, v, c, o, 0); }
ssize_t sys_pwritev2(int fd, const iovec* v, int c, off_t o, int f) { return syscall(SYS_pwritev2, fd, v, c, o, 0, f); }
int sys_ftruncate(int fd, off_t n) { return static_cast<int>(syscall(SYS_ftruncate, fd, n)); }
int sys_truncate(const char* p, off_t n) { return static_cast<int>(syscall(SYS_truncate, p, n)); }
int sys_fallocate(int fd, int m, off_t o, off_t n) { return static_cast<int>(syscall(SYS_fallocate, fd, m, o, n)); }
int sys_openat(int dirfd, const char* p, int f, ...) {
  va_list args;
  va_start(args, f);
  mode_t mode = (f & O_CREAT) != 0 || (f & O_TMPFILE) == O_TMPFILE ? va_arg(args, mode_t) : 0;
  va_end(args);
  return static_cast<int>(syscall(SYS_openat, dirfd, p, f, mode));
}
int sys_open(const char* p, int f, ...) {
  va_list args;
  va_start(args, f);
  mode_t mode = (f & O_CREAT) != 0 || (f & O_TMPFILE) == O_TMPFILE ? va_arg(args, mode_t) : 0;
  va_end(args);
  return sys_openat(AT_FDCWD, p, f, mode);
}
ssize_t sys_read(int fd, void* b, size_t n) { return syscall(SYS_read, fd, b, n); }
ssize_t sys_pread(int fd, void* b, size_t n, off_t o) { return syscall(SYS_pread64, fd, b, n, o); }
ssize_t sys_readv(int fd, const iovec* v, int c) { return syscall(SYS_readv, fd, v, c); }
ssize_t sys_preadv(int fd, const iovec* v, int c, off_t o) { return syscall(SYS_preadv, fd, v, c, o, 0); }
ssize_t sys_preadv2(int fd, const iovec* v, int c, off_t o, int f) { return syscall(SYS_preadv2, fd, v, c, o, 0, f); }
int sys_fsync(int fd) { return static_cast<int>(syscall(SYS_fsync, fd)); }
int sys_fdatasync(int fd) { return static_cast<int>(syscall(SYS_fdatasync, fd)); }
void sys_exit(int status) { syscall(SYS_exit_group, status); }

// The C library's functions that are no system call: their next definition, looked up at the call.
template <typename F>
F looked_up(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
FILE* lib_fopen(const char* p, const char* m) { return looked_up<decltype(&lib_fopen)>("fopen")(p, m); }
FILE* lib_freopen(const char* p, const char* m, FILE* f) {
  return looked_up<decltype(&lib_freopen)>("freopen")(p, m, f);
}
int lib_posix_spawn(pid_t* pid, const char* p, const posix_spawn_file_actions_t* a, const posix_spawnattr_t* t,
                    char* const argv[], char* const envp[]) {
  return looked_up<decltype(&lib_posix_spawn)>("posix_spawn")(pid, p, a, t, argv, envp);
}
int lib_posix_spawnp(pid_t* pid, const char* p, const posix_spawn_file_actions_t* a, const posix_spawnattr_t* t,
                     char* const argv[], char* const envp[]) {
  return looked_up<decltype(&lib_posix_spawnp)>("posix_spawnp")(pid, p, a, t, argv, envp);
}
int lib_system(const char* c) { return looked_up<decltype(&lib_system)>("system")(c); }
FILE* lib_popen(const char* c, const char* m) { return looked_up<decltype(&lib_popen)>("popen")(c, m); }
int sys_execve(const char* p, char* const argv[], char* const envp[]) {
  return static_cast<int>(syscall(SYS_execve, p, argv, envp));
}
int lib_execvpe(const char* f, char* const argv[], char* const envp[]) {
  return looked_up<decltype(&lib_execvpe)>("execvpe")(f, argv, envp);
}
int lib_fexecve(int fd, char* const argv[], char* const envp[]) {
  return looked_up<decltype(&lib_fexecve)>("fexecve")(fd, argv, envp);
}

KernelCalls system_calls{sys_mmap,     sys_munmap,   sys_mprotect,  sys_madvise,   sys_msync,  sys_mremap,
                         sys_write,    sys_pwrite,   sys_writev,    sys_pwritev,   sys_pwritev2, sys_ftruncate,
                         sys_truncate, sys_fallocate, sys_open,     sys_openat,    lib_fopen,  lib_freopen,
                         sys_read,     sys_pread,    sys_readv,     sys_preadv,    sys_preadv2, sys_fsync,
                         sys_fdatasync, sys_exit,    lib_posix_spawn, lib_posix_spawnp, lib_system, lib_popen,
                         nullptr,      sys_execve,   lib_execvpe,   lib_fexecve};
KernelCalls next_calls = system_calls;
bool resolved = false;

template <typename F>
void next(F& slot, const char* name) {
  if (void* found = dlsym(RTLD_NEXT, name)) slot = reinterpret_cast<F>(found);
}

// Runs before the program's own code (and before most libraries' initializers, which fall back to
// the system calls meanwhile).
__attribute__((constructor(101))) void resolve_next_calls() {
  KernelCalls calls = system_calls;
  next(calls.mmap, "mmap");
  next(calls.munmap, "munmap");
  next(calls.mprotect, "mprotect");
  next(calls.madvise, "madvise");
  next(calls.msync, "msync");
  next(calls.mremap, "mremap");
  next(calls.write, "write");
  next(calls.pwrite, "pwrite");
  next(calls.writev, "writev");
  next(calls.pwritev, "pwritev");
  next(calls.pwritev2, "pwritev2");
  next(calls.ftruncate, "ftruncate");
  next(calls.truncate, "truncate");
  next(calls.fallocate, "fallocate");
  next(calls.open, "open");
  next(calls.openat, "openat");
  next(calls.fopen, "fopen");
  next(calls.freopen, "freopen");
  next(calls.read, "read");
  next(calls.pread, "pread");
  next(calls.readv, "readv");
  next(calls.preadv, "preadv");
  next(calls.preadv2, "preadv2");
  next(calls.fsync, "fsync");
  next(calls.fdatasync, "fdatasync");
  next(calls.exit, "_exit");
  next(calls.posix_spawn, "posix_spawn");
  next(calls.posix_spawnp, "posix_spawnp");
  next(calls.system, "system");
  next(calls.popen, "popen");
  next(calls.vfork, "vfork");
  next(calls.execve, "execve");
  next(calls.execvpe, "execvpe");
  next(calls.fexecve, "fexecve");
  next_calls = calls;
  __atomic_store_n(&resolved, true, __ATOMIC_RELEASE);
}

}  // namespace

const KernelCalls& kernel() { return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE) ? next_calls : system_calls; }

pid_t (*next_vfork())() {
  if (pid_t (*vfork)() = kernel().vfork) return vfork;
  return looked_up<pid_t (*)()>("vfork");
}

}  // namespace autopager::preload

// The pager's own calls (renamed in its archive for the preload).
using autopager::preload::kernel;
extern "C" {
void* autopager_kernel_mmap(void* a, size_t n, int p, int f, int fd, off_t o) { return kernel().mmap(a, n, p, f, fd, o); }
int autopager_kernel_munmap(void* a, size_t n) { return kernel().munmap(a, n); }
int autopager_kernel_mprotect(void* a, size_t n, int p) { return kernel().mprotect(a, n, p); }
int autopager_kernel_madvise(void* a, size_t n, int advice) { return kernel().madvise(a, n, advice); }
int autopager_kernel_msync(void* a, size_t n, int f) { return kernel().msync(a, n, f); }
ssize_t autopager_kernel_write(int fd, const void* b, size_t n) { return kernel().write(fd, b, n); }
ssize_t autopager_kernel_pwrite(int fd, const void* b, size_t n, off_t o) { return kernel().pwrite(fd, b, n, o); }
ssize_t autopager_kernel_writev(int fd, const iovec* v, int c) { return kernel().writev(fd, v, c); }
ssize_t autopager_kernel_pwritev(int fd, const iovec* v, int c, off_t o) { return kernel().pwritev(fd, v, c, o); }
int autopager_kernel_ftruncate(int fd, off_t n) { return kernel().ftruncate(fd, n); }
int autopager_kernel_open(const char* p, int f, ...) {
  va_list args;
  va_start(args, f);
  mode_t mode = (f & O_CREAT) != 0 || (f & O_TMPFILE) == O_TMPFILE ? va_arg(args, mode_t) : 0;
  va_end(args);
  return kernel().open(p, f, mode);
}
ssize_t autopager_kernel_read(int fd, void* b, size_t n) { return kernel().read(fd, b, n); }
ssize_t autopager_kernel_pread(int fd, void* b, size_t n, off_t o) { return kernel().pread(fd, b, n, o); }
ssize_t autopager_kernel_readv(int fd, const iovec* v, int c) { return kernel().readv(fd, v, c); }
ssize_t autopager_kernel_preadv(int fd, const iovec* v, int c, off_t o) { return kernel().preadv(fd, v, c, o); }
int autopager_kernel_fsync(int fd) { return kernel().fsync(fd); }
int autopager_kernel_fdatasync(int fd) { return kernel().fdatasync(fd); }
}
