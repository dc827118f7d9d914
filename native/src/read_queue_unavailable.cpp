// Built without liburing: no ring, so every filler reads in place.
#include "read_queue.hpp"

namespace autopager {

struct ReadQueue::Ring {};

ReadQueue::ReadQueue(unsigned, std::size_t slot_size, int) : slot_size_(slot_size) {}
ReadQueue::~ReadQueue() = default;
unsigned ReadQueue::acquire() { return 0; }
void ReadQueue::release(unsigned) {}
void ReadQueue::read(unsigned, int, std::uint64_t, std::size_t) {}
void ReadQueue::submit() {}
void ReadQueue::collect(Wait, int, Events& events) { events.reads.clear(); }

}  // namespace autopager
