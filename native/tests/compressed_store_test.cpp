// The compressed layer: every byte back for compressible, incompressible and partly written pages with each
// codec; incompressible pages stored raw, compressible ones in fewer bytes; existing bytes read as they are;
// a slot that does not decompress is an error, never invented bytes; and the pager over it on a real nbdkit.
#include <random>

#include "nbd_server.hpp"
#include "test_util.hpp"

namespace autopager {
namespace {

using testing::small_config;

constexpr std::size_t kUnit = 16384;

// Counts the bytes written to the store below, to see what the layer sends.
class CountingStore final : public Store {
 public:
  explicit CountingStore(std::uint64_t size) : inner_(make_memory_store(size)) {}
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override { return inner_->read(dst, n, offset); }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    written += n;
    return inner_->write(src, n, offset);
  }
  std::uint64_t size() const override { return inner_->size(); }
  std::uint64_t written = 0;
  std::shared_ptr<Store> inner_;
};

std::vector<std::uint8_t> compressible(std::size_t n, unsigned seed) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>((i / 64 + seed) % 7);
  return bytes;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 random(seed);
  std::vector<std::uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
  return bytes;
}

class CompressedStoreTest : public ::testing::TestWithParam<Compression> {};

TEST_P(CompressedStoreTest, EveryByteComesBackAndOnlyPagesThatShrinkAreCompressed) {
  const std::uint64_t size = 16 * kUnit + 1000;  // a partial unit at the end
  auto backing = std::make_shared<CountingStore>(size);
  auto store = make_compressed_store(backing, GetParam(), kUnit);
  ASSERT_EQ(store->size(), size);
  EXPECT_FALSE(store->outlives_process());

  const auto soft = compressible(8 * kUnit, 1);
  ASSERT_EQ(store->write(soft.data(), soft.size(), 0), static_cast<ssize_t>(soft.size()));
  EXPECT_LT(backing->written, soft.size() / 4) << "compressible pages sent nearly whole";

  backing->written = 0;
  const auto hard = random_bytes(8 * kUnit + 1000, 2);
  ASSERT_EQ(store->write(hard.data(), hard.size(), 8 * kUnit), static_cast<ssize_t>(hard.size()));
  EXPECT_EQ(backing->written, hard.size()) << "incompressible pages are stored raw, in full";
  std::vector<std::uint8_t> raw(hard.size());
  ASSERT_EQ(backing->read(raw.data(), raw.size(), 8 * kUnit), static_cast<ssize_t>(raw.size()));
  EXPECT_TRUE(raw == hard) << "a raw page lies in its slot as it is";

  std::vector<std::uint8_t> all(size);
  ASSERT_EQ(store->read(all.data(), all.size(), 0), static_cast<ssize_t>(size));
  EXPECT_TRUE(std::equal(soft.begin(), soft.end(), all.begin()));
  EXPECT_TRUE(std::equal(hard.begin(), hard.end(), all.begin() + 8 * kUnit));

  // Reads and writes that cut units: parts of compressed pages (read, modify, write the whole page again).
  std::vector<std::uint8_t> expect = all;
  const auto patch = random_bytes(kUnit, 3);
  ASSERT_EQ(store->write(patch.data(), 3000, kUnit + 100), 3000);
  std::copy(patch.begin(), patch.begin() + 3000, expect.begin() + kUnit + 100);
  ASSERT_EQ(store->write(patch.data(), kUnit, 3 * kUnit + 500), static_cast<ssize_t>(kUnit));
  std::copy(patch.begin(), patch.end(), expect.begin() + 3 * kUnit + 500);
  std::vector<std::uint8_t> part(2 * kUnit + 77);
  ASSERT_EQ(store->read(part.data(), part.size(), kUnit - 33), static_cast<ssize_t>(part.size()));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), expect.begin() + kUnit - 33));
  ASSERT_EQ(store->read(all.data(), all.size(), 0), static_cast<ssize_t>(size));
  EXPECT_TRUE(all == expect);
  // Past the end: short reads, refused writes.
  EXPECT_EQ(store->read(part.data(), part.size(), size - 10), 10);
  errno = 0;
  EXPECT_EQ(store->write(part.data(), 11, size - 10), -1);
  EXPECT_EQ(errno, ENOSPC);
}

TEST_P(CompressedStoreTest, UnwrittenPagesReadTheBackingBytesAsTheyAre) {
  auto backing = make_memory_store(4 * kUnit);
  const auto existing = random_bytes(4 * kUnit, 4);
  ASSERT_EQ(backing->write(existing.data(), existing.size(), 0), static_cast<ssize_t>(existing.size()));
  auto store = make_compressed_store(backing, GetParam(), kUnit);
  const auto soft = compressible(kUnit, 5);
  ASSERT_EQ(store->write(soft.data(), kUnit, 2 * kUnit), static_cast<ssize_t>(kUnit));
  std::vector<std::uint8_t> all(4 * kUnit);
  ASSERT_EQ(store->read(all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
  EXPECT_TRUE(std::equal(all.begin(), all.begin() + 2 * kUnit, existing.begin()));
  EXPECT_TRUE(std::equal(soft.begin(), soft.end(), all.begin() + 2 * kUnit));
  EXPECT_TRUE(std::equal(all.begin() + 3 * kUnit, all.end(), existing.begin() + 3 * kUnit));
}

TEST_P(CompressedStoreTest, ASlotThatDoesNotDecompressIsAnErrorNotBytes) {
  auto backing = make_memory_store(2 * kUnit);
  auto store = make_compressed_store(backing, GetParam(), kUnit);
  const auto soft = compressible(kUnit, 6);
  ASSERT_EQ(store->write(soft.data(), kUnit, 0), static_cast<ssize_t>(kUnit));
  const auto junk = random_bytes(64, 7);
  ASSERT_EQ(backing->write(junk.data(), junk.size(), 0), 64);
  std::vector<std::uint8_t> got(kUnit);
  errno = 0;
  EXPECT_EQ(store->read(got.data(), kUnit, 0), -1);
  EXPECT_EQ(errno, EIO);
}

TEST_P(CompressedStoreTest, PagerOverACompressedNbdExport) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  AUTOPAGER_REQUIRE_NBDKIT();
  testing::NbdServer server({"memory", "8M"});
  const std::size_t size = 8u << 20;
  const auto soft = compressible(size / 2, 8);
  const auto hard = random_bytes(size / 2, 9);
  {
    Pager pager(small_config(kUnit, 16));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(open_nbd_store(server.uri(), GetParam(), kUnit), size));
    std::copy(soft.begin(), soft.end(), bytes);
    std::copy(hard.begin(), hard.end(), bytes + size / 2);
    ASSERT_EQ(pager.flush(), 0);
    EXPECT_TRUE(std::equal(soft.begin(), soft.end(), bytes));  // evicted pages, read back decompressed
    EXPECT_TRUE(std::equal(hard.begin(), hard.end(), bytes + size / 2));
    ASSERT_TRUE(pager.unmap(bytes));
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedStoreTest, ::testing::Values(Compression::lz4, Compression::zstd),
                         [](const auto& info) { return std::string(compression_name(info.param)); });

TEST(CompressedStore, NamesAndRefusals) {
  Compression c = Compression::none;
  EXPECT_TRUE(parse_compression("LZ4", &c));
  EXPECT_EQ(c, Compression::lz4);
  EXPECT_FALSE(parse_compression("gzip", &c));
  EXPECT_THROW(make_compressed_store(make_memory_store(kUnit), Compression::none, kUnit), std::invalid_argument);
  EXPECT_THROW(make_compressed_store(make_memory_store(kUnit), Compression::lz4, 0), std::invalid_argument);
}

}  // namespace
}  // namespace autopager
