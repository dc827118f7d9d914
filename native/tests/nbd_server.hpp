// A real nbdkit server on a Unix socket in a temporary directory, started and stopped by a test.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace autopager::testing {

inline bool have_nbdkit() { return std::system("nbdkit --version >/dev/null 2>&1") == 0; }

// Skips only where nbdkit is not installed (Debian: nbdkit), saying so.
#define AUTOPAGER_REQUIRE_NBDKIT()                                                                 \
  do {                                                                                             \
    if (!autopager::testing::have_nbdkit()) GTEST_SKIP() << "nbdkit is not installed (apt-get install nbdkit)"; \
  } while (0)

class NbdServer {
 public:
  // Runs `nbdkit [filters...] plugin args...` (e.g. {"memory", "1M"}) and waits until it serves.
  explicit NbdServer(std::vector<std::string> arguments) {
    char dir[] = "/tmp/autopager-nbd-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    dir_ = dir;
    socket_ = dir_ + "/socket";
    const std::string pidfile = dir_ + "/pid";
    std::vector<std::string> argv = {"nbdkit", "--foreground", "--exit-with-parent", "--unix", socket_, "--pidfile", pidfile};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execvp("nbdkit", args.data());
      _exit(127);
    }
    // nbdkit writes its pid file once it listens; a server that exits instead fails the test.
    struct stat st;
    while (stat(pidfile.c_str(), &st) != 0 || st.st_size == 0) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "nbdkit exited before serving";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~NbdServer() {
    kill(SIGKILL);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  NbdServer(const NbdServer&) = delete;
  NbdServer& operator=(const NbdServer&) = delete;

  std::string uri() const { return "nbd+unix:///?socket=" + socket_; }
  const std::string& dir() const { return dir_; }
  // Sends `signal`; SIGKILL also reaps it (the server is gone).
  void kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    if (signal == SIGSTOP) waitpid(pid_, nullptr, WUNTRACED);  // stopped before it can answer another request
    if (signal == SIGKILL) {
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace autopager::testing
