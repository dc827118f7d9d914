// The kernel's own memory, read, write, truncate and sync calls and the C library's process starts, past the preload: what a call the preload does not serve
// goes to, and what the pager's own calls go to (its archive is linked with mmap, munmap, ... renamed
// to autopager_kernel_*, see CMakeLists.txt), so nothing the pager does comes back into the preload.
#pragma once

#include <spawn.h>
#include <sys/mman.h>
#include <sys/types.h>

#include <cstdio>
#include <sys/uio.h>

namespace autopager::preload {

struct KernelCalls {
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  int (*munmap)(void*, size_t);
  int (*mprotect)(void*, size_t, int);
  int (*madvise)(void*, size_t, int);
  int (*msync)(void*, size_t, int);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  ssize_t (*write)(int, const void*, size_t);
  ssize_t (*pwrite)(int, const void*, size_t, off_t);
  ssize_t (*writev)(int, const iovec*, int);
  ssize_t (*pwritev)(int, const iovec*, int, off_t);
  ssize_t (*pwritev2)(int, const iovec*, int, off_t, int);
  int (*ftruncate)(int, off_t);
  int (*truncate)(const char*, off_t);
  int (*fallocate)(int, int, off_t, off_t);
  int (*open)(const char*, int, ...);
  int (*openat)(int, const char*, int, ...);
  FILE* (*fopen)(const char*, const char*);
  FILE* (*freopen)(const char*, const char*, FILE*);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*pread)(int, void*, size_t, off_t);
  ssize_t (*readv)(int, const iovec*, int);
  ssize_t (*preadv)(int, const iovec*, int, off_t);
  ssize_t (*preadv2)(int, const iovec*, int, off_t, int);
  int (*fsync)(int);
  int (*fdatasync)(int);
  void (*exit)(int);  // _exit
  int (*posix_spawn)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                     char* const[], char* const[]);
  int (*posix_spawnp)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                      char* const[], char* const[]);
  int (*system)(const char*);
  FILE* (*popen)(const char*, const char*);
  pid_t (*vfork)();  // only ever jumped to (interpose.cpp), never called from C
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
  int (*fexecve)(int, char* const[], char* const[]);
};

// The next definitions after the preload's (the C library's), looked up once; before that (a call
// from another library's initializer) the system calls themselves, or for the C library's own
// functions (fopen, posix_spawn, ...) their next definitions looked up at the call.
const KernelCalls& kernel();
// The next vfork, for the preload's vfork to jump to.
pid_t (*next_vfork())();

}  // namespace autopager::preload
