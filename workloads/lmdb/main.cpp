// lmdb: db_bench's read benchmarks on the real, unmodified LMDB library (liblmdb): readseq (a cursor
// from the first key to the last), readreverse (from the last to the first) and readrandom (mdb_get of
// random keys). The database holds the records of the kv workload (kv_file.hpp: 16-byte keys, values
// computable from the record number), so every key and value read is checked. LMDB maps the database
// with mmap() itself: run as is, the kernel serves it; under `autopager exec` (transparent: true in its
// configs) the preload library does, and the result line carries the pager's statistics. Each thread
// reads its own part of the records, or its share of the lookups. Metric: operations per second.
#include <dlfcn.h>
#include <lmdb.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "datafile.hpp"
#include "db_bench.hpp"
#include "kv_file.hpp"
#include "operations.hpp"
#include "random.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint64_t kQuerySeed = 0x1db4c4;
constexpr std::uint64_t kRecordsPerCommit = 100000;

void check(int rc, const char* what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error(std::string(what) + ": " + mdb_strerror(rc));
}

// An LMDB environment, closed when the scope ends.
struct Environment {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  Environment(const std::string& directory, unsigned flags, std::uint64_t map_bytes) {
    check(mdb_env_create(&env), "mdb_env_create");
    if (map_bytes != 0) check(mdb_env_set_mapsize(env, map_bytes), "mdb_env_set_mapsize");
    check(mdb_env_set_maxreaders(env, 1024), "mdb_env_set_maxreaders");
    int rc = mdb_env_open(env, directory.c_str(), flags, 0644);
    if (rc != MDB_SUCCESS) {
      mdb_env_close(env);
      throw DataError("cannot open the LMDB database in " + directory + ": " + mdb_strerror(rc) +
                      ((flags & MDB_RDONLY) ? "; make it with --generate" : ""));
    }
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, flags & MDB_RDONLY, &txn), "mdb_txn_begin");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "mdb_dbi_open");
    check(mdb_txn_commit(txn), "mdb_txn_commit");
  }
  ~Environment() { mdb_env_close(env); }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

std::string database_dir(const std::string& data_dir, std::uint64_t size_mib, std::size_t value_bytes) {
  return data_path(data_dir, "lmdb-" + std::to_string(size_mib) + "m-v" + std::to_string(value_bytes));
}

// Puts the records in key order into a database made in a temporary directory, renamed when complete.
void generate(const std::string& directory, const KvLayout& layout) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(directory) / "data.mdb")) return;
  const std::string partial = directory + ".partial";
  fs::remove_all(partial);
  fs::create_directories(partial);
  {
    // LMDB's pages and branch levels come to well under twice the records' bytes.
    const std::uint64_t map_bytes = layout.records * layout.record_bytes() * 2 + (64ULL << 20);
    Environment db(partial, MDB_NOSYNC, map_bytes);
    char key_bytes[kKeyBytes];
    std::string value(layout.value_bytes, '\0');
    for (std::uint64_t first = 0; first < layout.records; first += kRecordsPerCommit) {
      MDB_txn* txn = nullptr;
      check(mdb_txn_begin(db.env, nullptr, 0, &txn), "mdb_txn_begin");
      for (std::uint64_t i = first; i < std::min(layout.records, first + kRecordsPerCommit); ++i) {
        make_key(i, key_bytes);
        for (std::size_t word = 0; word < layout.value_bytes / 8; ++word) {
          const std::uint64_t w = value_word(i, word);
          std::memcpy(&value[8 * word], &w, 8);
        }
        MDB_val key{kKeyBytes, key_bytes};
        MDB_val data{layout.value_bytes, value.data()};
        check(mdb_put(txn, db.dbi, &key, &data, MDB_APPEND), "mdb_put");
      }
      check(mdb_txn_commit(txn), "mdb_txn_commit");
    }
    check(mdb_env_sync(db.env, 1), "mdb_env_sync");
  }
  fs::rename(partial, directory);
  drop_from_page_cache((fs::path(directory) / "data.mdb").string());
}

void tally_record(std::uint64_t record, const MDB_val& key, const MDB_val& data, std::size_t value_bytes, Tally& tally) {
  char expected[kKeyBytes];
  make_key(record, expected);
  const std::uint64_t sum = data.mv_size == value_bytes ? value_sum(static_cast<const char*>(data.mv_data), value_bytes) : 0;
  tally.value_sum += sum;
  tally.errors += key.mv_size != kKeyBytes || std::memcmp(key.mv_data, expected, kKeyBytes) != 0 ||
                  sum != expected_value_sum(record, value_bytes);
}

// readseq and readreverse: one cursor a thread over its contiguous part of the records.
Tally scan(const Environment& db, const KvLayout& layout, bool reverse) {
  std::uint64_t value_sum = 0, errors = 0;
#pragma omp parallel reduction(+ : value_sum, errors)
  {
    const std::uint64_t threads = static_cast<std::uint64_t>(omp_get_num_threads());
    const std::uint64_t me = static_cast<std::uint64_t>(omp_get_thread_num());
    const std::uint64_t begin = layout.records * me / threads, end = layout.records * (me + 1) / threads;
    Tally mine;
    MDB_txn* txn = nullptr;
    MDB_cursor* cursor = nullptr;
    if (begin < end && mdb_txn_begin(db.env, nullptr, MDB_RDONLY, &txn) == MDB_SUCCESS &&
        mdb_cursor_open(txn, db.dbi, &cursor) == MDB_SUCCESS) {
      char start[kKeyBytes];
      make_key(reverse ? end - 1 : begin, start);
      MDB_val key{kKeyBytes, start}, data{};
      int rc = mdb_cursor_get(cursor, &key, &data, MDB_SET_KEY);
      for (std::uint64_t k = 0; k < end - begin; ++k) {
        if (rc != MDB_SUCCESS) {
          mine.errors += end - begin - k;
          break;
        }
        tally_record(reverse ? end - 1 - k : begin + k, key, data, layout.value_bytes, mine);
        if (k + 1 < end - begin) rc = mdb_cursor_get(cursor, &key, &data, reverse ? MDB_PREV : MDB_NEXT);
      }
      mdb_cursor_close(cursor);
      mdb_txn_abort(txn);
    } else {
      mine.errors += end - begin;
    }
    value_sum += mine.value_sum;
    errors += mine.errors;
  }
  return {value_sum, errors};
}

// readrandom: lookup j gets the key of record keys.key(seed, j) (the same lookups for any thread count), in a
// read transaction of its thread.
class Reader {
 public:
  Reader(const Environment& db, const KvLayout& layout, const KeyChooser& keys)
      : db_(db), layout_(layout), keys_(keys), open_(mdb_txn_begin(db.env, nullptr, MDB_RDONLY, &txn_) == MDB_SUCCESS) {}
  ~Reader() {
    if (open_) mdb_txn_abort(txn_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  void operator()(std::uint64_t j, Tally& tally) const {
    const std::uint64_t wanted = keys_.key(kQuerySeed, j);
    char key_bytes[kKeyBytes];
    make_key(wanted, key_bytes);
    MDB_val key{kKeyBytes, key_bytes}, data{};
    if (!open_ || mdb_get(txn_, db_.dbi, &key, &data) != MDB_SUCCESS) {
      ++tally.errors;
      return;
    }
    tally_record(wanted, key, data, layout_.value_bytes, tally);
  }

 private:
  const Environment& db_;
  const KvLayout& layout_;
  const KeyChooser& keys_;
  MDB_txn* txn_ = nullptr;
  const bool open_;
};

// The pager's statistics when the preload library serves this process's mappings, else empty.
std::string preload_statistics() {
  using StatsFunction = int (*)(char*, std::size_t);
  auto stats = reinterpret_cast<StatsFunction>(dlsym(RTLD_DEFAULT, "autopager_preload_stats"));
  if (stats == nullptr) return "";
  char json[4096];
  return stats(json, sizeof json) > 0 ? std::string(json) : std::string();
}

Result run(const Options& options, const Settings& settings) {
  const DbBench bench = read_db_bench_options(options);
  const KvLayout& layout = bench.layout;
  if (settings.backend == Backend::kernel)
    throw UsageError("lmdb maps its database with LMDB's own mmap(); run it under `autopager exec` for the pager");
  const std::string directory = database_dir(settings.data_dir, bench.size_mib, layout.value_bytes);
  if (settings.generate_only) {
    generate(directory, layout);
    return {};
  }
  Environment db(directory, MDB_RDONLY | MDB_NOTLS, 0);
  MDB_stat stat{};
  {
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(db.env, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin");
    check(mdb_stat(txn, db.dbi, &stat), "mdb_stat");
    mdb_txn_abort(txn);
  }
  if (stat.ms_entries != layout.records)
    throw DataError("the database in " + directory + " holds " + std::to_string(stat.ms_entries) + " records, not " +
                    std::to_string(layout.records) + "; remove it and make it again with --generate");

  Tally tally;
  Stopwatch timer;
  std::uint64_t operations = bench.operations;
  if (bench.random()) operations = run_operations(bench.operations, bench.seconds, tally, [&] { return Reader(db, layout, bench.keys); });
  else
    for (std::uint64_t pass = 0; pass < bench.passes; ++pass) tally += scan(db, layout, bench.reverse());
  const double seconds = timer.seconds();
  Result result = db_bench_result(bench, operations, seconds, tally, preload_statistics());
  result.mode = result.stats.empty() ? "mmap" : "preload";
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("lmdb", "db_bench read benchmarks (readseq, readrandom, readreverse) on LMDB (liblmdb).");
  add_db_bench_options(options, "size of the records in MiB (the database is larger: LMDB's pages and tree)");
  return workload_main(options, argc, argv, run);
}
