// A read that cannot be served is SIGBUS to the faulting thread, never a page of zeros: a store
// error (after one retry) and a page past the end of a truncated file, through the fillers' io_uring
// and in place, with UFFDIO_POISON and with the signal sent to the thread where it is missing.
#include <sys/mman.h>
#include <sys/wait.h>

#include <tuple>

#include "fault_injection.hpp"

namespace autopager {
namespace {

using testing::Access;
using testing::FaultyFileStore;
using testing::pattern_byte;
using testing::read_catching_sigbus;
using testing::ScopedEnv;
using testing::ScratchFile;
using testing::small_config;

constexpr std::uint64_t kPages = 16;
constexpr std::uint64_t kBad = 3;  // the page whose reads fail

// (through the io_uring, the kernel's poison marker or else a signal to the thread)
class ReadErrors : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void SetUp() override {
    if (!std::get<1>(GetParam())) no_poison_ = std::make_unique<ScopedEnv>("AUTOPAGER_DISABLE_UFFD_FEATURES", "poison");
  }
  bool through_ring() const { return std::get<0>(GetParam()); }
  bool poison() const { return std::get<1>(GetParam()); }
  std::unique_ptr<ScopedEnv> no_poison_;
};

TEST_P(ReadErrors, ATransientErrorIsRetried) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(kPages * page);
  auto store = std::make_shared<FaultyFileStore>(file.path(), through_ring());
  store->fail_reads_at(kBad * page, 1);
  Pager pager(small_config(page, 4));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, kPages * page, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < kPages * page; ++i) wrong += bytes[i] != pattern_byte(i, 1);
  EXPECT_EQ(wrong, 0u);
  if (through_ring()) EXPECT_GT(store->ring_reads(), 0u) << "the reads went through the io_uring";
  pager.unmap(bytes);
}

TEST_P(ReadErrors, APersistentErrorIsSigbusAtTheAddressUntilThePageIsReadAgain) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(kPages * page);
  auto store = std::make_shared<FaultyFileStore>(file.path(), through_ring());
  store->fail_reads_at(kBad * page, FaultyFileStore::kForever);
  Pager pager(small_config(page, 4));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(store, kPages * page));
  std::uint8_t* bad = bytes + kBad * page + 123;

  for (int attempt = 0; attempt < 2; ++attempt) {  // every access, not only the first
    Access access = read_catching_sigbus(bad);
    ASSERT_TRUE(access.sigbus) << "read " << int(access.value) << " instead of a SIGBUS, attempt " << attempt;
    if (poison()) EXPECT_EQ(access.address, bad) << "si_addr is the address touched";
    else EXPECT_EQ(access.code, SI_TKILL) << "sent to the faulting thread";
  }
  for (std::uint64_t p = 0; p < kPages; ++p)
    if (p != kBad) ASSERT_EQ(bytes[p * page + 5], pattern_byte(p * page + 5, 1)) << "page " << p;

  // The store recovers; once the page has left the buffer (poisoned pages are evicted like any other),
  // the next access reads it.
  store->fail_reads_at(kBad * page, 0);
  for (std::uint64_t p = 0; p < kPages; ++p)
    if (p != kBad) ASSERT_EQ(bytes[p * page + 7], pattern_byte(p * page + 7, 1));
  Access again = read_catching_sigbus(bad);
  ASSERT_FALSE(again.sigbus);
  EXPECT_EQ(again.value, pattern_byte(kBad * page + 123, 1));
  bad[0] = 0xEE;
  ASSERT_TRUE(pager.unmap(bytes));
  std::vector<std::uint8_t> after = file.contents();
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < after.size(); ++i) wrong += after[i] != (bytes + i == bad ? 0xEE : pattern_byte(i, 1));
  EXPECT_EQ(wrong, 0u) << "no byte of the file changed but the one written";
  if (through_ring()) EXPECT_GT(store->ring_reads(), 0u);
}

// Truncated by someone else while mapped: pages past the new end are SIGBUS, the page holding the end
// reads the file's bytes then zeros, the rest is intact.
TEST_P(ReadErrors, AFileTruncatedWhileMappedIsSigbusPastItsEnd) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(kPages * page);
  auto store = std::make_shared<FaultyFileStore>(file.path(), through_ring());
  // Page 10, read past the end below, is never read before: absent under every eviction policy (one that
  // keeps pages faulted again could keep it resident, and a resident page is read without a fault).
  Config config = small_config(page, 4);
  config.read_ahead = 0;
  Pager pager(config);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(store, kPages * page, PROT_READ));
  for (std::size_t i = 0; i < kPages * page; i += 64)
    if (i / page != 10) ASSERT_EQ(bytes[i], pattern_byte(i, 1));
  const std::size_t end = 4 * page + page / 2;
  ASSERT_EQ(truncate(file.path().c_str(), static_cast<off_t>(end)), 0);
  Access past = read_catching_sigbus(bytes + 10 * page + 1);
  ASSERT_TRUE(past.sigbus) << "read " << int(past.value);
  if (poison()) EXPECT_EQ(past.address, bytes + 10 * page + 1);
  for (std::size_t i = 0; i < end; ++i) ASSERT_EQ(bytes[i], pattern_byte(i, 1)) << i;
  for (std::size_t i = end; i < 5 * page; ++i) ASSERT_EQ(bytes[i], 0) << i;
  pager.unmap(const_cast<std::uint8_t*>(bytes));
}

INSTANTIATE_TEST_SUITE_P(Paths, ReadErrors, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& info) {
                           return std::string(std::get<0>(info.param) ? "IoUring" : "InPlace") +
                                  (std::get<1>(info.param) ? "Poison" : "SignalToThread");
                         });

// With the default action the process dies of SIGBUS, as with the kernel's mmap.
TEST(ReadErrors, AProcessWithoutAHandlerDiesOfSigbus) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(kPages * page);
  std::string errors;
  int status = testing::run_in_child(
      [&] {
        signal(SIGBUS, SIG_DFL);  // the default action, also under the sanitizers (which catch it)
        auto store = std::make_shared<FaultyFileStore>(file.path(), true);
        store->fail_reads_at(kBad * page, FaultyFileStore::kForever);
        Pager pager(small_config(page, 4));
        auto* bytes = static_cast<volatile std::uint8_t*>(pager.map(store, kPages * page, PROT_READ));
        return bytes[kBad * page] == 0 ? 10 : 11;  // either way: the read returned
      },
      &errors);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status << ": " << errors;
  EXPECT_NE(errors.find("cannot be served"), std::string::npos) << errors;
}

// A real file store, mapped longer than its file: the page holding the end reads zeros after it, and
// a page wholly past it is SIGBUS, as with the kernel's mmap.
TEST(ReadErrors, PagesPastTheEndOfTheFileAreSigbus) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(page + 100);
  Pager pager(small_config(page, 8));
  const std::size_t length = 3 * page;
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), length, PROT_READ));
  for (std::size_t i = 0; i < page + 100; ++i) ASSERT_EQ(bytes[i], pattern_byte(i, 1)) << i;
  for (std::size_t i = page + 100; i < 2 * page; ++i) ASSERT_EQ(bytes[i], 0) << i;
  Access past = read_catching_sigbus(bytes + 2 * page + 5);
  EXPECT_TRUE(past.sigbus);
  EXPECT_EQ(past.address, bytes + 2 * page + 5);
  pager.unmap(const_cast<std::uint8_t*>(bytes));
  EXPECT_EQ(file.contents().size(), page + 100) << "reading must not change the file";
}

}  // namespace
}  // namespace autopager
