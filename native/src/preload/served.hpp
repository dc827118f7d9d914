// The file mappings the preload serves from a pager (docs/TRANSPARENT.md, DESIGN.md "Transparent
// mode (preload)"), and what the memory and write calls do to them. A call that does not touch a served
// mapping goes to the kernel unchanged. A served mapping that a call would make differ from the kernel's
// (another protection, a move, a partial unmap, a write() to its file, advice that changes contents) is
// first handed to the kernel: its dirty pages written back, then a kernel mapping of the same file put
// over the same addresses at once, so the program sees the same bytes at the same place.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "autopager/pager.hpp"
#include "copy_on_write_store.hpp"
#include "settings.hpp"

namespace autopager::preload {

class ServedMappings {
 public:
  // The process's one table, never destroyed (calls may come during exit).
  static ServedMappings& instance();

  void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset);
  // An anonymous mapping (heap.cpp): a large private one is served from a scratch file when the heap
  // is on (UMAP_PRELOAD_HEAP), every other goes to the kernel.
  void* mmap_anonymous(void* address, size_t length, int prot, int flags);
  // The size from which malloc's blocks and anonymous mappings are served (UMAP_PRELOAD_HEAP_MIN), or
  // the largest size when the heap is off; the settings are read at the first call.
  std::uint64_t heap_threshold();
  int munmap(void* address, size_t length);
  int msync(void* address, size_t length, int flags);
  int mprotect(void* address, size_t length, int prot);
  int madvise(void* address, size_t length, int advice);
  // Before the kernel moves or resizes a mapping at `address`. False, with errno, when a served mapping
  // there stays with the pager (its pages could not be written back): the call must fail.
  bool before_remap(void* address);
  // Before a mapping with MAP_FIXED (or a move) onto [address, address + length): served mappings there
  // go to the kernel, whose mapping the new one then replaces. False, with errno, as before_remap.
  bool before_fixed(void* address, size_t length);
  // Before a write(), truncation or fallocate() of `fd`'s file: its served mappings go to the kernel.
  void before_write(int fd, const char* why);
  // Before truncate(2), or an open with O_TRUNC (fopen "w"), of the file at `path` (as fstatat(2) finds it
  // from `dirfd` with `at_flags`): its served mappings go to the kernel, whose mapping the truncation
  // then changes as the kernel's page cache would (a page past the new end is SIGBUS).
  void before_truncate(int dirfd, const char* path, int at_flags, const char* why);
  // Before a read() of `fd`'s file: its served writable mappings go to the kernel, so that the read
  // sees what was written through them.
  void before_read(int fd);
  // Before fsync() or fdatasync() of `fd`'s file: its served writable mappings are written back.
  // Returns 0, or the errno of a failed write-back.
  int before_sync(int fd);

  // Before _exit: every write through a served mapping reaches its file, as with the kernel's page cache.
  void before_exit();
  // Before a child process starts without fork() (posix_spawn, system, popen, vfork) or the process
  // execs: every write through a served mapping reaches its file, as with the kernel's page cache.
  void before_spawn();
  // pthread_atfork, once a pager exists: before fork every write reaches the files; the child maps
  // them with the kernel.
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

  // The pager's statistics as JSON, or empty before the first served mapping.
  std::string stats_json() const;
  void print_summary() const;

 private:
  struct Served {
    char* base;
    std::size_t length;   // as the program asked
    std::size_t span;     // length in whole system pages: what the program sees
    std::size_t mapped;   // length in whole pager pages: the pager's region
    int fd;               // the preload's own descriptor of the file; -1 for a heap mapping (no file)
    dev_t device;
    ino_t inode;
    off_t offset;
    int prot;
    bool shared;
    std::string path;
    // A MAP_PRIVATE writable mapping's store: the file (zeros for a heap mapping), and the pages
    // written, in a scratch file.
    std::shared_ptr<python::CopyOnWriteStore> private_writes;
    bool writes_file() const;
  };
  using FileId = std::pair<dev_t, ino_t>;

  // The call's range in whole pages; false when it cannot concern a served mapping (none are, or the
  // address is not page-aligned: the kernel refuses it).
  bool may_concern_served(void* address, size_t length, char*& begin, char*& end) const;
  Pager* pager_locked();
  // Reads the settings at the first call; false (everything left to the kernel) when they are bad.
  bool settings_locked();
  // Whether the heap's directory has room for `span` more bytes besides every heap mapping served.
  bool heap_has_room_locked(std::size_t span);
  void print_heap_summary_locked() const;
  void print_read_amplification_locked() const;
  std::vector<Served*> overlapping_locked(const char* begin, const char* end);
  bool map_over_with_kernel(const Served& served) const;
  // Gives a served mapping to the kernel. False, with errno, when the pager could not write its pages
  // back: then it stays served, so that nothing else of the process reaches the pager's range.
  bool hand_over_locked(Served& served, const char* why);
  // Hands over every served mapping overlapping [begin, end); false, with the first failure's errno, when
  // any stays served.
  bool hand_over_all_locked(const char* begin, const char* end, const char* why);
  void forget_locked(const Served& served);
  // Hands over every served mapping of `file` (a regular file's stat).
  void hand_over_file(const struct stat& file, const char* why);
  // Writes back every writable served mapping; `when` names the moment in messages.
  void flush_locked(const char* when);
  // The served mappings of `fd`'s file, or none (not a regular file, or nothing served).
  std::vector<Served*> of_file_locked(const struct stat& file);

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Served> served_;
  std::set<FileId> kernel_files_;    // left to the kernel for the rest of the process
  std::atomic<std::size_t> count_{0};
  std::atomic<std::size_t> writable_count_{0};  // of them MAP_SHARED with PROT_WRITE
  std::atomic<Pager*> pager_{nullptr};
  bool disabled_ = false;            // settings or pager refused, or a forked child
  bool settings_read_ = false;
  Settings settings_;
  std::uint64_t served_total_ = 0;
  std::uint64_t served_direct_ = 0;  // of them, with a store that reads and writes its file with O_DIRECT
  std::uint64_t handed_over_ = 0;
  std::uint64_t heap_served_ = 0;    // anonymous mappings served
  std::uint64_t heap_refused_ = 0;   // of those wanted, left to the kernel: no room in the heap's directory
  std::uint64_t served_bytes_ = 0;   // the lengths of every mapping served, files' and heap's
  std::atomic<std::uint64_t> heap_threshold_{0};  // 0 until the settings are read
};

}  // namespace autopager::preload
