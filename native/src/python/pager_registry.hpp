// Every pager the module opened, so that the interpreter's exit can write back what its arrays
// changed even when Python never destroys them (objects still alive at exit are not always freed).
#pragma once

#include <memory>

#include "autopager/pager.hpp"

namespace autopager::python {

// A new pager, remembered (weakly) for flush_all_pagers.
std::shared_ptr<Pager> open_pager(const Config& config);
// Writes back the dirty pages of every pager still alive; returns how many pagers failed.
int flush_all_pagers();

}  // namespace autopager::python
