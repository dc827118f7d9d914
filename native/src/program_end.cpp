#include "program_end.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pager_threads.hpp"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL  // Linux 6.9: a pidfd of one thread, readable when that thread has ended
#endif

namespace autopager {
namespace {

constexpr unsigned kIoWorker = 0x10;  // PF_IO_WORKER in /proc/.../stat's flags: an io_uring worker
// How often to look whether the main thread has ended (the kernel wakes no waiter on a main thread's
// pidfd while other threads live), and whether other threads have where their ends cannot be waited for
// (a kernel before 6.9, or no descriptor left).
constexpr auto kLookAgain = std::chrono::seconds(1);

// Whether the thread `tid` of this process still runs the program's code: not ended (a zombie main
// thread, or one ending), no pager thread (this copy's or another's, all named ap-*), no io_uring worker.
bool runs_program_code(pid_t tid) {
  // No allocation while the main thread runs: a thread's first malloc can reserve it an arena of 64 MiB of
  // address space, which a program under RLIMIT_AS would miss.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // ended
  char text[512];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  // "tid (comm) state ppid pgrp session tty_nr tpgid flags ..."; comm may hold spaces and parentheses.
  const char* open = std::strchr(text, '(');
  const char* close = std::strrchr(text, ')');
  if (open == nullptr || close == nullptr || close < open) return false;
  if (std::strncmp(open + 1, "ap-", 3) == 0) return false;
  char state = 0;
  unsigned flags = 0;
  if (std::sscanf(close + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2) return false;
  if (state == 'Z' || state == 'X' || state == 'x') return false;
  return (flags & kIoWorker) == 0 && !is_pager_thread(tid);
}

std::vector<pid_t> program_threads() {
  std::vector<pid_t> found;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return found;
  while (const dirent* entry = readdir(tasks)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && runs_program_code(static_cast<pid_t>(tid)))
      found.push_back(static_cast<pid_t>(tid));
  }
  closedir(tasks);
  return found;
}

// Returns once one of `threads` has ended (or, where that cannot be waited for, after a while).
void wait_for_an_end(const std::vector<pid_t>& threads) {
  std::vector<pollfd> ends;
  bool waitable = true;
  for (pid_t tid : threads) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, tid, PIDFD_THREAD));
    if (fd < 0) {
      waitable = errno == ESRCH;  // it has just ended: look again at once
      break;
    }
    ends.push_back(pollfd{fd, POLLIN, 0});
  }
  if (waitable && ends.size() == threads.size()) {
    while (poll(ends.data(), ends.size(), -1) < 0 && errno == EINTR) {
    }
  } else if (!waitable) {
    std::this_thread::sleep_for(kLookAgain);
  }
  for (const pollfd& end : ends) close(end.fd);
}

}  // namespace

void watch_for_program_end() {
  const pid_t main_thread = getpid();
  while (runs_program_code(main_thread)) std::this_thread::sleep_for(kLookAgain);
  for (std::vector<pid_t> left = program_threads(); !left.empty(); left = program_threads()) wait_for_an_end(left);
  std::exit(0);
}

}  // namespace autopager
