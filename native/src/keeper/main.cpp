// autopager-keeper: holds the page memory of a process's regions whose writes must outlive it, and when
// the process dies (however it dies) or execs, writes back every page it left marked dirty, then exits.
// Started by keeper_link.cpp with its socket on keeper::kSocketFd and a pidfd of the process on
// kProcessFd; docs/DESIGN.md, "Pager: writes kept through the process's death".
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "keeper/protocol.hpp"
#include "store/io.hpp"

namespace autopager::keeper {
namespace {

// The exit status when pages could not be written (sysexits.h's EX_IOERR, as the pager's exit).
constexpr int kUnwritten = 74;

struct KeptRegion {
  int pages = -1;   // the region's page memory
  int states = -1;  // one byte a page
  int store = -1;   // the file
  std::uint64_t store_offset = 0;
  std::uint64_t page_size = 0;
  std::uint64_t length = 0;
};

std::map<std::uint64_t, KeptRegion> regions;
bool reported = false;  // the process reported its unwritten pages at exit (kReported)

void close_region(const KeptRegion& region) {
  close(region.pages);
  close(region.states);
  close(region.store);
}

enum class Received { kMessage, kNothing, kEnd };

// One message (waiting for it unless `flags` has MSG_DONTWAIT); kEnd when the socket has closed.
Received receive(int flags) {
  Message message{};
  iovec data{&message, sizeof message};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t got;
  do got = recvmsg(kSocketFd, &header, flags | MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? Received::kNothing : Received::kEnd;
  if (got == 0) return Received::kEnd;
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  if (got == static_cast<ssize_t>(sizeof message) && message.kind == MessageKind::kKeep && fds.size() == 3) {
    regions[message.key] = KeptRegion{fds[0], fds[1], fds[2], message.store_offset, message.page_size, message.length};
    return Received::kMessage;
  }
  for (int fd : fds) close(fd);
  if (got == static_cast<ssize_t>(sizeof message) && message.kind == MessageKind::kReported) reported = true;
  if (got == static_cast<ssize_t>(sizeof message) && message.kind == MessageKind::kForget) {
    auto it = regions.find(message.key);
    if (it != regions.end()) {
      close_region(it->second);
      regions.erase(it);
    }
  }
  return Received::kMessage;
}

// Writes to the store what of [from, to) of the region's memory holds data. A hole is never written: a page
// whose fill the death cut short (its state already dirty) has holes where nothing was copied yet, and the
// file's bytes there are the page's. Returns 0 or an errno.
int write_data(const KeptRegion& region, std::uint64_t from, std::uint64_t to, std::vector<char>& buffer) {
  while (from < to) {
    off_t data = lseek(region.pages, static_cast<off_t>(from), SEEK_DATA);
    if (data < 0) return errno == ENXIO ? 0 : errno;
    if (static_cast<std::uint64_t>(data) >= to) return 0;
    off_t hole = lseek(region.pages, data, SEEK_HOLE);
    const std::uint64_t end = hole < 0 ? to : std::min<std::uint64_t>(to, static_cast<std::uint64_t>(hole));
    for (std::uint64_t at = static_cast<std::uint64_t>(data); at < end;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), end - at));
      errno = 0;
      if (read_fully(region.pages, buffer.data(), n, at) != static_cast<ssize_t>(n) ||
          write_fully(region.store, buffer.data(), n, region.store_offset + at) != static_cast<ssize_t>(n))
        return errno != 0 ? errno : EIO;
      at += n;
    }
    from = end;
  }
  return 0;
}

std::string file_name(int fd) {
  char name[4096];
  ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), name, sizeof name - 1);
  return n > 0 ? std::string(name, static_cast<std::size_t>(n)) : "descriptor " + std::to_string(fd);
}

// Writes back the region's dirty pages; returns how many could not be written.
std::uint64_t write_back(const KeptRegion& region, std::vector<char>& buffer) {
  const std::uint64_t page_count = (region.length + region.page_size - 1) / region.page_size;
  const std::size_t system_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t states_bytes = (page_count + system_page - 1) / system_page * system_page;
  void* area = mmap(nullptr, states_bytes, PROT_READ, MAP_SHARED, region.states, 0);
  if (area == MAP_FAILED) {
    std::fprintf(stderr, "autopager-keeper: cannot read the page states of a region of %s: %s; its unwritten "
                         "changes are lost\n", file_name(region.store).c_str(), std::strerror(errno));
    return page_count;
  }
  const auto* states = static_cast<const volatile std::uint8_t*>(area);
  std::uint64_t unwritten = 0;
  int first_error = 0;
  for (std::uint64_t page = 0; page < page_count; ++page) {
    if (states[page] != kDirtyState) continue;
    const std::uint64_t from = page * region.page_size;
    if (int err = write_data(region, from, std::min(region.length, from + region.page_size), buffer); err != 0) {
      ++unwritten;
      if (first_error == 0) first_error = err;
    }
  }
  munmap(area, states_bytes);
  if (unwritten > 0 && !reported)
    std::fprintf(stderr, "autopager-keeper: %llu dirty page(s) of %s could not be written back after the program "
                         "ended (%s): their changes are lost\n",
                 static_cast<unsigned long long>(unwritten), file_name(region.store).c_str(),
                 std::strerror(first_error));
  return unwritten;
}

// The pid behind the pidfd (its fdinfo's "Pid:" line), or 0.
pid_t watched_pid() {
  FILE* info = std::fopen(("/proc/self/fdinfo/" + std::to_string(kProcessFd)).c_str(), "r");
  if (info == nullptr) return 0;
  char line[256];
  pid_t pid = 0;
  while (pid == 0 && std::fgets(line, sizeof line, info) != nullptr)
    if (std::strncmp(line, "Pid:", 4) == 0) pid = static_cast<pid_t>(std::atoi(line + 4));
  std::fclose(info);
  return pid > 0 ? pid : 0;
}

// Whether the process still maps page memory it handed over (kept_memory.cpp names it): its socket closed while
// it lives and maps it when it closed every descriptor (as a daemon may), and it may still write those pages
// and write them back itself; a write-back from here would race with its own. After an exec it maps none.
bool still_maps_kept_memory(pid_t pid) {
  FILE* maps = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "r");
  if (maps == nullptr) return false;
  char line[4096];
  bool mapped = false;
  while (!mapped && std::fgets(line, sizeof line, maps) != nullptr) mapped = std::strstr(line, ("/memfd:" + std::string(kPagesName)).c_str()) != nullptr;
  std::fclose(maps);
  return mapped;
}

int keep() {
  signal(SIGPIPE, SIG_IGN);
  // Out of the program's tree at once: the program reaps this first process and never waits for the keeper.
  pid_t keeper = fork();
  if (keeper < 0) return 1;
  if (keeper > 0) _exit(0);
  // Nothing of the program's but the two descriptors and stderr (for what could not be written): a pipe it
  // inherited would otherwise stay open for whoever reads its other end.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
  }
  syscall(SYS_close_range, kProcessFd + 1, ~0u, 0);
  const Hello hello = static_cast<Hello>(getpid());
  if (send(kSocketFd, &hello, sizeof hello, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof hello)) return 1;
  for (;;) {
    pollfd watched[] = {{kSocketFd, POLLIN, 0}, {kProcessFd, POLLIN, 0}};
    if (poll(watched, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (watched[1].revents != 0) break;  // the process has ended
    const bool ended = (watched[0].revents & POLLIN) != 0 ? receive(0) == Received::kEnd : watched[0].revents != 0;
    if (!ended) continue;
    // Its socket closed: it exec'd, or it lives on without the socket; then wait for its end.
    const pid_t pid = watched_pid();
    if (pid != 0 && still_maps_kept_memory(pid)) {
      pollfd process{kProcessFd, POLLIN, 0};
      while (poll(&process, 1, -1) < 0 && errno == EINTR) {
      }
    }
    break;
  }
  // Every region it sent before it ended is in the socket already.
  while (receive(MSG_DONTWAIT) == Received::kMessage) {
  }
  std::vector<char> buffer(std::size_t{1} << 20);
  std::uint64_t unwritten = 0;
  for (const auto& [key, region] : regions) unwritten += write_back(region, buffer);
  return unwritten > 0 ? kUnwritten : 0;
}

}  // namespace
}  // namespace autopager::keeper

int main() { return autopager::keeper::keep(); }
