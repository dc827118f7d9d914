#include "keys.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "random.hpp"

namespace workloads {
namespace {

// sum over k = 1..n of 1 / k^s: exactly for the first terms, then by the integral of the rest (Euler-Maclaurin's
// first term), which is within 1e-9 of the sum past a million terms, so that a billion keys cost no time.
double generalized_harmonic(std::uint64_t n, double s) {
  constexpr std::uint64_t kExactTerms = 1 << 20;
  double sum = 0;
  const std::uint64_t exact = std::min(n, kExactTerms);
  for (std::uint64_t k = 1; k <= exact; ++k) sum += std::pow(static_cast<double>(k), -s);
  if (n > exact) {
    const double a = static_cast<double>(exact) + 0.5, b = static_cast<double>(n) + 0.5;
    sum += (std::pow(b, 1 - s) - std::pow(a, 1 - s)) / (1 - s);
  }
  return sum;
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

KeyChooser::KeyChooser(std::uint64_t keys, double exponent) : keys_(std::max<std::uint64_t>(keys, 1)), exponent_(exponent) {
  if (exponent_ == 0) return;
  zeta_ = generalized_harmonic(keys_, exponent_);
  alpha_ = 1 / (1 - exponent_);
  half_pow_ = std::pow(0.5, exponent_);
  const double zeta2 = generalized_harmonic(2, exponent_);
  eta_ = (1 - std::pow(2.0 / static_cast<double>(keys_), 1 - exponent_)) / (1 - zeta2 / zeta_);
}

KeyChooser KeyChooser::zipf(std::uint64_t keys, double exponent) {
  if (!(exponent > 0 && exponent < 1)) throw UsageError("option --zipf-exponent must be above 0 and below 1");
  return KeyChooser(keys, exponent);
}

KeyChooser KeyChooser::from_options(const Options& options, std::uint64_t keys) {
  if (options.choice("keys", {"uniform", "zipf"}) == "uniform") return uniform(keys);
  return zipf(keys, options.real("zipf-exponent", 0, 1));
}

std::uint64_t KeyChooser::key(std::uint64_t seed, std::uint64_t j) const {
  const std::uint64_t draw = mix64(seed + j);
  if (exponent_ == 0) return draw % keys_;
  const double u = unit(draw), uz = u * zeta_;
  std::uint64_t rank;
  if (uz < 1) rank = 0;
  else if (uz < 1 + half_pow_) rank = 1;
  else rank = static_cast<std::uint64_t>(static_cast<double>(keys_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  rank = std::min(rank, keys_ - 1);
  return mix64(rank ^ 0x5a1f) % keys_;
}

std::string KeyChooser::describe() const {
  if (exponent_ == 0) return "uniform";
  char text[32];
  std::snprintf(text, sizeof text, "zipf %g", exponent_);
  return text;
}

void add_key_options(Options& options) {
  options.add("keys", "uniform", "how queries choose keys: uniform, or zipf (skewed, --zipf-exponent)");
  options.add("zipf-exponent", "0.99", "with --keys zipf: rank r's weight is 1/(r+1)^exponent, 0 < exponent < 1");
}

}  // namespace workloads
