// Built without liburing: no ring, so every filler reads in place.
#include "read_queue.hpp"

namespace autopager {

struct ReadQueue::Ring {};

ReadQueue::ReadQueue(unsigned, int) {}
ReadQueue::~ReadQueue() = default;
void ReadQueue::read(unsigned, char*, int, std::uint64_t, std::size_t) {}
void ReadQueue::submit() {}
void ReadQueue::collect(Wait, int, Events& events) { events.reads.clear(); }

}  // namespace autopager
