// The NBD store against a real nbdkit: every byte through the store and through the pager, the file plugin's
// file, a long call's requests as the server sees them, a server killed or stopped mid-run (reads SIGBUS,
// write-backs reported, nothing hangs), an export that is full or shorter than a page, read errors from the
// server.
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "fault_injection.hpp"
#include "nbd_server.hpp"
#include "umap/umap.h"

namespace autopager {
namespace {

using testing::NbdServer;
using testing::pattern_byte;
using testing::read_catching_sigbus;
using testing::ScratchFile;
using testing::small_config;

std::vector<std::uint8_t> pattern(std::size_t n, std::uint64_t seed, std::uint64_t from = 0) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(from + i, seed);
  return bytes;
}

TEST(NbdStore, RefusesWhatIsNotAnNbdUri) {
  EXPECT_FALSE(is_nbd_uri("/tmp/file"));
  EXPECT_TRUE(is_nbd_uri("nbd://localhost:10809/x"));
  EXPECT_TRUE(is_nbd_uri("nbd+unix:///?socket=/tmp/s"));
  EXPECT_THROW(make_nbd_store("/tmp/file"), std::invalid_argument);
  errno = 0;
  EXPECT_EQ(umap_nbd(nullptr, 4096, PROT_READ, UMAP_PRIVATE, "file.dat"), UMAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(NbdStore, NoServerIsAnErrorNamingTheUri) {
  try {
    make_nbd_store("nbd+unix:///?socket=/nonexistent/autopager-socket");
    FAIL() << "connected to nothing";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/autopager-socket"), std::string::npos) << e.what();
  }
}

// The C API in a child, for a default pager of its own configured by UMAP_COMPRESSION.
TEST(NbdStore, UmapNbdMapsTheExportThroughTheCApi) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  NbdServer server({"memory", "1M"});
  const std::size_t size = 1u << 20;
  for (const char* compression : {"none", "lz4"}) {
    const int status = testing::in_forked_child(60, [&] {
      setenv("UMAP_COMPRESSION", compression, 1);
      setenv("UMAP_PAGESIZE", "16384", 1);
      setenv("UMAP_BUFSIZE", "8", 1);
      auto* bytes = static_cast<std::uint8_t*>(umap_nbd(nullptr, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE, server.uri().c_str()));
      if (bytes == UMAP_FAILED) return 10;
      for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i / 4096);
      if (umap_flush() != 0) return 11;
      for (std::size_t i = 0; i < size; ++i)
        if (bytes[i] != static_cast<std::uint8_t>(i / 4096)) return 12;
      if (uunmap(bytes, size) != 0) return 13;
      errno = 0;
      if (umap_nbd(nullptr, 2 * size, PROT_READ, UMAP_PRIVATE, server.uri().c_str()) != UMAP_FAILED || errno != EINVAL)
        return 14;  // past the export
      return 0;
    });
    EXPECT_EQ(status, 0) << compression;
    if (std::string(compression) == "none") {  // raw pages land on the export as they are
      // Read in a child too: this process stays single-threaded for the next fork (ThreadSanitizer refuses
      // threads in a child forked from a process that had some).
      const int read_back = testing::in_forked_child(60, [&] {
        std::vector<std::uint8_t> back(size);
        if (make_nbd_store(server.uri())->read(back.data(), size, 0) != static_cast<ssize_t>(size)) return 20;
        for (std::size_t i = 0; i < size; ++i)
          if (back[i] != static_cast<std::uint8_t>(i / 4096)) return 21;
        return 0;
      });
      EXPECT_EQ(read_back, 0);
    }
  }
}

TEST(NbdStore, EveryByteRoundTripsInChunksAndFromThreads) {
  AUTOPAGER_REQUIRE_NBDKIT();
  NbdServer server({"memory", "64M"});
  NbdStoreOptions options;
  options.connections = 3;
  auto store = make_nbd_store(server.uri(), options);
  ASSERT_EQ(store->size(), 64u << 20);
  EXPECT_TRUE(store->writable());
  // One call larger than the largest request, then threads on their own ranges at once.
  const auto big = pattern(40u << 20, 3);
  ASSERT_EQ(store->write(big.data(), big.size(), 4096), static_cast<ssize_t>(big.size()));
  std::vector<std::uint8_t> back(big.size());
  ASSERT_EQ(store->read(back.data(), back.size(), 4096), static_cast<ssize_t>(back.size()));
  EXPECT_TRUE(back == big);
  std::vector<std::thread> threads;
  std::atomic<unsigned> wrong{0};
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (unsigned k = 0; k < 64; ++k) {
        const std::uint64_t offset = (t * 64 + k) * 65536ull;
        const auto bytes = pattern(65536, 7, offset);
        std::vector<std::uint8_t> got(65536);
        if (store->write(bytes.data(), bytes.size(), offset) != 65536 || store->read(got.data(), got.size(), offset) != 65536 ||
            got != bytes)
          ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(store->sync(), 0);
}

// The connections the server saw, from nbdkit's log filter: its "connection=N Connect" lines.
unsigned connections_logged(const std::string& log) {
  std::ifstream in(log);
  unsigned count = 0;
  for (std::string line; std::getline(in, line);) count += line.find(" Connect export=") != std::string::npos;
  return count;
}

TEST(NbdStore, SeveralConnectionsOnlyWhereTheServerAllowsThem) {
  AUTOPAGER_REQUIRE_NBDKIT();
  for (const char* mode : {"emulate", "disable"}) {  // multi-conn offered, refused
    char dir[] = "/tmp/autopager-nbdlog-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string log = std::string(dir) + "/log";
    {
      NbdServer server({"--filter=log", "--filter=multi-conn", "memory", "1M", "logfile=" + log,
                        std::string("multi-conn-mode=") + mode});
      NbdStoreOptions options;
      options.connections = 3;
      auto store = make_nbd_store(server.uri(), options);
      const auto bytes = pattern(8192, 1);
      ASSERT_EQ(store->write(bytes.data(), bytes.size(), 0), 8192);
      std::vector<std::uint8_t> back(8192);
      for (int i = 0; i < 6; ++i) ASSERT_EQ(store->read(back.data(), back.size(), 0), 8192);
      EXPECT_TRUE(back == bytes);
      store.reset();
    }
    EXPECT_EQ(connections_logged(log), std::string(mode) == "emulate" ? 3u : 1u) << mode;
    std::remove(log.c_str());
    rmdir(dir);
  }
}

// The requests of one kind ("Write", "Read") in nbdkit's log: each one's connection and byte count.
std::vector<std::pair<unsigned, std::uint64_t>> requests_logged(const std::string& log, const std::string& kind) {
  std::ifstream in(log);
  std::vector<std::pair<unsigned, std::uint64_t>> requests;
  for (std::string line; std::getline(in, line);) {
    const auto connection = line.find("connection=");
    const auto count = line.find(" count=0x");
    if (connection == std::string::npos || count == std::string::npos || line.find(" " + kind + " id=") == std::string::npos) continue;
    requests.emplace_back(std::stoul(line.substr(connection + 11)), std::stoull(line.substr(count + 9), nullptr, 16));
  }
  return requests;
}

// A write-back of a run of pages is received and stored by the server in parallel: 1 MiB requests dealt out
// over the connections, not one request of the whole run on one connection.
TEST(NbdStore, ALongCallGoesAsMebibyteRequestsOverEveryConnection) {
  AUTOPAGER_REQUIRE_NBDKIT();
  char dir[] = "/tmp/autopager-nbdlog-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/log";
  const std::size_t size = 8u << 20;
  const auto bytes = pattern(size, 11);
  {
    NbdServer server({"--filter=log", "memory", "16M", "logfile=" + log});
    NbdStoreOptions options;
    options.connections = 4;
    auto store = make_nbd_store(server.uri(), options);
    ASSERT_EQ(store->write(bytes.data(), size, 4096), static_cast<ssize_t>(size));
    std::vector<std::uint8_t> back(size);
    ASSERT_EQ(store->read(back.data(), size, 4096), static_cast<ssize_t>(size));
    EXPECT_TRUE(back == bytes);
    store.reset();
  }
  for (const char* kind : {"Write", "Read"}) {
    const auto requests = requests_logged(log, kind);
    ASSERT_EQ(requests.size(), 8u) << kind;
    std::set<unsigned> connections;
    for (const auto& [connection, count] : requests) {
      EXPECT_EQ(count, 1u << 20) << kind;
      connections.insert(connection);
    }
    EXPECT_EQ(connections.size(), 4u) << kind;
  }
  std::remove(log.c_str());
  rmdir(dir);
}

TEST(NbdStore, PagerMapsTheExportAndEveryWriteReachesIt) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  NbdServer server({"memory", "4M"});
  const std::size_t page = 16384, size = 4u << 20;
  {
    Pager pager(small_config(page, 16));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_nbd_store(server.uri()), size));
    for (std::size_t i = 0; i < size; ++i) bytes[i] = pattern_byte(i, 5);  // 256 pages through 16
    ASSERT_EQ(pager.flush(), 0);
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < size; ++i) wrong += bytes[i] != pattern_byte(i, 5);
    EXPECT_EQ(wrong, 0u);
    ASSERT_TRUE(pager.unmap(bytes));
  }
  auto store = make_nbd_store(server.uri());
  std::vector<std::uint8_t> back(size);
  ASSERT_EQ(store->read(back.data(), size, 0), static_cast<ssize_t>(size));
  EXPECT_TRUE(back == pattern(size, 5));
}

TEST(NbdStore, FilePluginServesTheFileAndWritesLandInIt) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  const std::size_t page = 4096, size = 1u << 20;
  ScratchFile file(size, 9);
  NbdServer server({"file", file.path()});
  {
    Pager pager(small_config(page, 8));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_nbd_store(server.uri()), size));
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < size; ++i) wrong += bytes[i] != pattern_byte(i, 9);
    EXPECT_EQ(wrong, 0u);
    for (std::size_t i = 0; i < size; i += 3) bytes[i] = static_cast<std::uint8_t>(i * 7);
    ASSERT_TRUE(pager.unmap(bytes));
  }
  const auto after = file.contents();
  ASSERT_EQ(after.size(), size);
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < size; ++i) wrong += after[i] != (i % 3 == 0 ? static_cast<std::uint8_t>(i * 7) : pattern_byte(i, 9));
  EXPECT_EQ(wrong, 0u);
}

TEST(NbdStore, ExportShorterThanAPageReadsShortAndWritesPastItAreRefused) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  NbdServer server({"memory", "10000"});
  auto store = make_nbd_store(server.uri());
  ASSERT_EQ(store->size(), 10000u);
  const auto bytes = pattern(10000, 4);
  ASSERT_EQ(store->write(bytes.data(), bytes.size(), 0), 10000);
  std::vector<std::uint8_t> got(8192, 0xee);
  EXPECT_EQ(store->read(got.data(), got.size(), 8192), 10000 - 8192);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + (10000 - 8192), bytes.begin() + 8192));
  errno = 0;
  EXPECT_EQ(store->write(bytes.data(), 4096, 8192), -1);
  EXPECT_EQ(errno, ENOSPC);
  // Through the pager: the last page holds the export's tail and zeros after it, as mmap past a file's end.
  Pager pager(small_config(4096, 4));
  auto* mapped = static_cast<std::uint8_t*>(pager.map(store, 10000));
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), mapped));
  for (std::size_t i = 10000; i < 12288; ++i) EXPECT_EQ(mapped[i], 0) << i;
  mapped[9999] = 0x5a;
  ASSERT_TRUE(pager.unmap(mapped));
  std::uint8_t last = 0;
  ASSERT_EQ(store->read(&last, 1, 9999), 1);
  EXPECT_EQ(last, 0x5a);
  EXPECT_THROW(pager.map(store, 20000), std::invalid_argument);  // a region past the export
}

TEST(NbdStore, ReadTheServerFailsIsSigbusNotZeros) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  const std::size_t page = 4096, size = 64 * page;
  // nbdkit's error filter fails every read once the trigger file exists.
  char dir[] = "/tmp/autopager-trigger-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string trigger = std::string(dir) + "/fail";
  ScratchFile file(size, 2);
  NbdServer server({"--filter=error", "file", file.path(), "error-pread=EIO", "error-pread-rate=100%",
                    "error-pread-file=" + trigger});
  Pager pager(small_config(page, 8));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_nbd_store(server.uri()), size, PROT_READ));
  EXPECT_EQ(read_catching_sigbus(bytes).value, pattern_byte(0, 2));
  std::ofstream(trigger) << "";
  const auto access = read_catching_sigbus(bytes + 40 * page + 1);
  EXPECT_TRUE(access.sigbus) << "read " << int(access.value);
  std::remove(trigger.c_str());
  // The server recovers; once the poisoned page has left the buffer, the next access reads it.
  std::uint64_t wrong = 0;
  for (std::size_t p = 0; p < 64; ++p)
    if (p != 40) wrong += read_catching_sigbus(bytes + p * page + 7).value != pattern_byte(p * page + 7, 2);
  EXPECT_EQ(wrong, 0u);
  const auto again = read_catching_sigbus(bytes + 40 * page + 1);
  EXPECT_FALSE(again.sigbus);
  EXPECT_EQ(again.value, pattern_byte(40 * page + 1, 2));
  ASSERT_TRUE(pager.unmap(bytes));
  rmdir(dir);
}

// In a child process: a pager left with pages it cannot write back keeps them until the exit, which reports them.
TEST(NbdStore, ServerKilledMidRunReadsSigbusAndWriteBacksAreReported) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  const std::size_t page = 4096, size = 64 * page;
  NbdServer server({"memory", "1M"});
  const int status = testing::in_forked_child(60, [&] {
    Pager pager(small_config(page, 8));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_nbd_store(server.uri()), size));
    bytes[0] = 1;
    if (pager.flush() != 0) _exit(10);
    bytes[1] = 2;  // dirty, resident
    server.kill(SIGKILL);
    if (!read_catching_sigbus(bytes + 50 * page).sigbus) _exit(11);
    if (pager.flush() != -1) _exit(12);
    if (bytes[0] != 1 || bytes[1] != 2) _exit(13);  // the page is kept, with both writes
    if (pager.unmap(bytes)) _exit(14);
    _exit(0);  // not exit(): the exit reports the pages kept, and fails
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(NbdStore, ServerThatStopsAnsweringTimesOutInsteadOfHanging) {
  AUTOPAGER_REQUIRE_NBDKIT();
  NbdServer server({"memory", "1M"});
  NbdStoreOptions options;
  options.timeout_ms = 300;
  auto store = make_nbd_store(server.uri(), options);
  std::vector<std::uint8_t> bytes(4096);
  ASSERT_EQ(store->read(bytes.data(), bytes.size(), 0), 4096);
  server.kill(SIGSTOP);
  errno = 0;
  EXPECT_EQ(store->read(bytes.data(), bytes.size(), 0), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  EXPECT_EQ(store->write(bytes.data(), bytes.size(), 0), -1);  // the connection is shut down: no late reply
  server.kill(SIGCONT);
}

TEST(NbdStore, FullExportReportsTheWriteBackAndKeepsThePage) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  const std::size_t page = 4096;
  NbdServer server({"full", "256K"});  // reads zeros, every write ENOSPC
  const int status = testing::in_forked_child(60, [&] {
    Pager pager(small_config(page, 8));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_nbd_store(server.uri()), 64 * page));
    bytes[5] = 9;
    errno = 0;
    if (pager.flush() != -1 || errno != ENOSPC) _exit(10);
    if (bytes[5] != 9) _exit(11);
    if (pager.unmap(bytes) || errno != ENOSPC) _exit(12);
    _exit(0);  // not exit(): the exit reports the pages kept, and fails
    return 0;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace autopager
