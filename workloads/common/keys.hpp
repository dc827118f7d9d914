// Which key a random-access workload's query asks for: uniform over the keys (today's streams, unchanged), or
// Zipf-distributed, since real key-value traffic is skewed (a few keys take most queries). Query j's key is a
// function of j alone, so the stream is the same for any thread count and on any machine.
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"

namespace workloads {

class KeyChooser {
 public:
  // --keys (uniform or zipf) and --zipf-exponent of `options` (add_key_options), over `keys` keys.
  static KeyChooser from_options(const Options& options, std::uint64_t keys);
  static KeyChooser uniform(std::uint64_t keys) { return KeyChooser(keys, 0.0); }
  // Rank r (0 the most asked for) has weight 1 / (r + 1)^exponent, 0 < exponent < 1 (YCSB's 0.99 the usual),
  // drawn by Gray et al.'s closed-form approximation ("Quickly generating billion-record synthetic
  // databases", YCSB's generator). The ranks are scattered over the keys by a hash, as YCSB's scrambled
  // Zipfian does, so that the hot keys lie on pages all over the data rather than on its first pages.
  static KeyChooser zipf(std::uint64_t keys, double exponent);

  // The key of query j of the stream `seed`, in [0, keys).
  std::uint64_t key(std::uint64_t seed, std::uint64_t j) const;
  // "uniform" or "zipf 0.99", for checksums and logs.
  std::string describe() const;

 private:
  KeyChooser(std::uint64_t keys, double exponent);

  std::uint64_t keys_;
  double exponent_;  // 0: uniform
  double zeta_ = 0, alpha_ = 0, eta_ = 0, half_pow_ = 0;
};

// Declares --keys and --zipf-exponent.
void add_key_options(Options& options);

}  // namespace workloads
