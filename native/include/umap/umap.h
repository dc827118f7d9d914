/* The UMap C API (UMap v2 signatures): programs written for UMap build against autopager unchanged
 * and link with -lumap. Every call goes to one process-wide pager configured from UMAP_* variables. */
#ifndef AUTOPAGER_UMAP_H
#define AUTOPAGER_UMAP_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#else
#include <stddef.h>
#include <stdint.h>
#endif
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define UMAP_PRIVATE MAP_PRIVATE
#define UMAP_FIXED MAP_FIXED
#define UMAP_FAILED ((void*)-1)

#ifdef __cplusplus
extern "C" {
#endif

struct umap_prefetch_item {
  void* page_base_addr;
};
#ifndef __cplusplus
typedef struct umap_prefetch_item umap_prefetch_item;
#endif

/* Maps `length` bytes of the file `fd` from `offset`, at an address aligned to the UMap page size.
 * `flags`: UMAP_PRIVATE, optionally with UMAP_FIXED (the region goes exactly at `addr`, which must be
 * aligned to the page size). Returns UMAP_FAILED with errno set (EINVAL for a refused configuration,
 * whose reason is printed on stderr, or an offset + length past the largest file offset; EACCES for a
 * descriptor not open for reading, or not for writing with PROT_WRITE). The region is not inherited by
 * fork(): in a child, touching it is SIGSEGV, and the child's umap() calls get a pager of its own. */
void* umap(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
/* As umap, for `length` bytes of an NBD export from its start: `uri` is nbd://host[:port]/export or
 * nbd+unix:///export?socket=PATH (libnbd's URIs). With UMAP_COMPRESSION=lz4 or zstd its pages are stored
 * compressed (the export is then this process's paging space: what is written reads back only through this
 * mapping). Returns UMAP_FAILED with errno: EINVAL for what is not an NBD URI or a length past the export's
 * size, ECONNREFUSED when the server cannot be reached or this autopager was built without libnbd (the reason
 * printed on stderr). A read the server fails is SIGBUS; a failed write-back fails umap_flush and uunmap. */
void* umap_nbd(void* addr, size_t length, int prot, int flags, const char* uri);
/* Writes back the region's dirty pages and releases it. Returns -1 with errno when a write-back failed
 * (ENOSPC, EIO...): the region then stays mapped with the pages not written, and may be unmapped again. */
int uunmap(void* addr, size_t length);
/* Writes back every dirty page of every region. Returns -1 with errno when a write-back failed. */
int umap_flush(void);
/* Brings in the pages holding the given addresses, asynchronously. */
void umap_prefetch(int npages, struct umap_prefetch_item* page_array);
/* Brings in the pages of [paddr, paddr + size) (cut at the region's end) and pins them: never evicted
 * until the region is unmapped. On failure (an address in no region; more pinned pages than the
 * buffer's low water mark) prints why and sets errno (EINVAL, ENOMEM). */
void umap_fetch_and_pin(char* paddr, uint64_t size);
/* 1 when writes are tracked with userfaultfd write-protect. */
int umap_has_write_support(void);

long umapcfg_get_system_page_size(void);
uint64_t umapcfg_get_umap_page_size(void);
uint64_t umapcfg_get_max_fault_events(void);
uint64_t umapcfg_get_num_fillers(void);
uint64_t umapcfg_get_num_evictors(void);
uint64_t umapcfg_get_max_pages_in_buffer(void);
uint64_t umapcfg_get_read_ahead(void);
int umapcfg_get_evict_low_water_threshold(void);
int umapcfg_get_evict_high_water_threshold(void);

#ifdef __cplusplus
}
#endif

#endif
