// Built without libnbd: an NBD URI is refused with what to install.
#include <stdexcept>

#include "autopager/store.hpp"

namespace autopager {

std::shared_ptr<Store> make_nbd_store(const std::string& uri, const NbdStoreOptions&) {
  throw std::runtime_error("NBD export " + uri +
                           ": this autopager was built without libnbd (install libnbd-dev and rebuild)");
}

}  // namespace autopager
