// This process's link to its keeper (keeper/main.cpp): the keeper is started on first use (again in a
// forked child), and told of each region it keeps and each it may forget. docs/DESIGN.md, "Pager:
// writes kept through the process's death".
#pragma once

#include <cstdint>
#include <stdexcept>

#include "keeper/protocol.hpp"

namespace autopager {

// The keeper cannot be started or has gone: what() says why.
class KeeperUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace keeper_link {

// Hands the keeper a region (`message.kind` kKeep) and its three descriptors, which the caller still
// closes; the keeper holds its own once this returns. Throws KeeperUnavailable.
void keep(const keeper::Message& message, int pages_fd, int states_fd, int store_fd);
// The region `key` is gone (written back); nothing when the keeper is gone or belongs to a parent.
void forget(std::uint64_t key);

// The process is exiting and has reported its unwritten pages (kReported); nothing without a keeper.
void reported();

// fork(): held across it (after the pager's fork locks), released in the parent; in the child, released
// and the parent's link closed, so that the child neither talks to the parent's keeper nor keeps its
// socket open (the keeper also ends when its socket closes: the program exec'd).
void lock_for_fork();
void unlock_after_fork();
void start_child();

}  // namespace keeper_link
}  // namespace autopager
