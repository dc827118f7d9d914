// What a pager tells its process's keeper (keeper/main.cpp) over their socket, and how the keeper is
// started: docs/DESIGN.md, "Pager: writes kept through the process's death".
#pragma once

#include <cstdint>

namespace autopager::keeper {

// The keeper's descriptors as it starts: its end of the socket, and a pidfd of the process it keeps.
constexpr int kSocketFd = 3;
constexpr int kProcessFd = 4;

enum class MessageKind : std::uint32_t {
  // A region to keep, with three descriptors (SCM_RIGHTS): its page memory (a memfd as long as the region
  // in whole pages), its page states (a memfd of one PageState byte a page) and its store's file.
  kKeep = 1,
  // A region unmapped, every page written back: the keeper closes its descriptors.
  kForget = 2,
  // The process is exiting and has reported the pages it could not write back itself: the keeper still
  // tries them, but says nothing more of those it cannot write.
  kReported = 3,
};

struct Message {
  MessageKind kind;
  std::uint64_t key;           // the region's, unique within the process
  std::uint64_t store_offset;  // where the region's first byte lies in the file
  std::uint64_t page_size;
  std::uint64_t length;        // the region's bytes; its last page may be partial
};

// The name of a region's page memory (memfd_create); /proc/PID/maps shows it as "/memfd:autopager-pages".
constexpr const char* kPagesName = "autopager-pages";

// PageState::kDirty (region.hpp): the pages the keeper writes back.
constexpr std::uint8_t kDirtyState = 2;

// The keeper's first message, once it is out of the process's tree: its pid.
using Hello = std::int32_t;

}  // namespace autopager::keeper
