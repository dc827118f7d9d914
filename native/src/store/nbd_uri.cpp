// What names an NBD store, and the store the front ends open for it.
#include "autopager/store.hpp"

namespace autopager {

bool is_nbd_uri(const std::string& text) {
  for (const char* scheme : {"nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://"}) {
    if (text.rfind(scheme, 0) == 0) return true;
  }
  return false;
}

std::shared_ptr<Store> open_nbd_store(const std::string& uri, Compression compression, std::size_t page_size) {
  std::shared_ptr<Store> store = make_nbd_store(uri);
  if (compression == Compression::none) return store;
  return make_compressed_store(std::move(store), compression, page_size);
}

}  // namespace autopager
