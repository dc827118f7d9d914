#include "keeper_link.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern char** environ;

namespace autopager::keeper_link {
namespace {

// A leaf: nothing else is taken while it is held.
std::mutex& link_mutex() {
  static std::mutex m;
  return m;
}
int link_socket = -1;  // guarded by link_mutex(); this process's end, or -1 before the keeper starts

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Where the keeper is: $AUTOPAGER_KEEPER, else beside the library (or program) that holds this code,
// else where this build put it, else where it is installed.
std::string keeper_path() {
  if (const char* set = std::getenv("AUTOPAGER_KEEPER"); set != nullptr && *set != '\0') return set;
  std::vector<std::string> candidates;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&keeper_path), &info) != 0 && info.dli_fname != nullptr &&
      std::strchr(info.dli_fname, '/') != nullptr) {
    candidates.push_back(directory_of(info.dli_fname) + "/autopager-keeper");
  } else {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) candidates.push_back(directory_of(std::string(exe, static_cast<std::size_t>(n))) + "/autopager-keeper");
  }
  candidates.push_back(AUTOPAGER_KEEPER_BUILT);
  candidates.push_back(AUTOPAGER_KEEPER_INSTALLED);
  for (const std::string& path : candidates)
    if (access(path.c_str(), X_OK) == 0) return path;
  return std::string();
}

[[noreturn]] void unavailable(const std::string& why, int err = 0) {
  throw KeeperUnavailable("the keeper process (autopager-keeper) " + why +
                          (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
}

// Starts the keeper; returns this process's end of its socket.
int start_keeper() {
  const std::string path = keeper_path();
  if (path.empty())
    unavailable("was found nowhere: not in $AUTOPAGER_KEEPER, beside the library, in the build (" +
                std::string(AUTOPAGER_KEEPER_BUILT) + ") or installed (" + AUTOPAGER_KEEPER_INSTALLED + ")");
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) unavailable("could not get a socket", errno);
  int process = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (process < 0) {
    int err = errno;
    close(ends[0]);
    close(ends[1]);
    unavailable("cannot watch this process (pidfd_open)", err);
  }
  // Above the keeper's own numbers, so that neither dup2 overwrites the other's source.
  int socket_source = fcntl(ends[1], F_DUPFD_CLOEXEC, 10);
  int process_source = fcntl(process, F_DUPFD_CLOEXEC, 10);
  close(ends[1]);
  close(process);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, socket_source, keeper::kSocketFd);
  posix_spawn_file_actions_adddup2(&actions, process_source, keeper::kProcessFd);
  // Its own session: a signal to the program's process group (Ctrl-C, a job's time limit) spares it.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  // Without LD_PRELOAD: the preload would serve the keeper's own mappings.
  std::vector<char*> environment;
  for (char** v = environ; v != nullptr && *v != nullptr; ++v)
    if (std::strncmp(*v, "LD_PRELOAD=", 11) != 0) environment.push_back(*v);
  environment.push_back(nullptr);
  char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
  pid_t first = 0;
  int err = posix_spawn(&first, path.c_str(), &actions, &attributes, argv, environment.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(socket_source);
  close(process_source);
  if (err != 0) {
    close(ends[0]);
    unavailable("could not be started from " + path, err);
  }
  // The keeper forks at once and its first process exits (so that the keeper is no child of the program's,
  // which it would otherwise wait for); its hello comes from the keeper itself.
  keeper::Hello hello = 0;
  ssize_t got;
  do got = recv(ends[0], &hello, sizeof hello, 0);
  while (got < 0 && errno == EINTR);
  err = errno;
  while (waitpid(first, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (got != static_cast<ssize_t>(sizeof hello)) {
    close(ends[0]);
    unavailable("started from " + path + " but did not answer", got < 0 ? err : 0);
  }
  return ends[0];
}

bool send_message(int socket, const keeper::Message& message, const int* fds, std::size_t count) {
  iovec data{const_cast<keeper::Message*>(&message), sizeof message};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  if (count > 0) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(rights), fds, count * sizeof(int));
  }
  ssize_t sent;
  do sent = sendmsg(socket, &header, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(sizeof message);
}

}  // namespace

void keep(const keeper::Message& message, int pages_fd, int states_fd, int store_fd) {
  std::lock_guard<std::mutex> lock(link_mutex());
  if (link_socket < 0) link_socket = start_keeper();
  const int fds[] = {pages_fd, states_fd, store_fd};
  if (send_message(link_socket, message, fds, 3)) return;
  // The keeper has gone (killed): a new one keeps this region and the later ones.
  close(link_socket);
  link_socket = -1;
  link_socket = start_keeper();
  if (!send_message(link_socket, message, fds, 3)) unavailable("took no region", errno);
}

namespace {
void tell(keeper::MessageKind kind, std::uint64_t key) {
  std::lock_guard<std::mutex> lock(link_mutex());
  if (link_socket < 0) return;
  keeper::Message message{};
  message.kind = kind;
  message.key = key;
  (void)send_message(link_socket, message, nullptr, 0);
}
}  // namespace

void forget(std::uint64_t key) { tell(keeper::MessageKind::kForget, key); }
void reported() { tell(keeper::MessageKind::kReported, 0); }

void lock_for_fork() { link_mutex().lock(); }
void unlock_after_fork() { link_mutex().unlock(); }
void start_child() {
  if (link_socket >= 0) close(link_socket);
  link_socket = -1;
  link_mutex().unlock();
}

}  // namespace autopager::keeper_link
