// splitmix64 (Steele, Lea and Flood): a portable generator and mixer. The same seed gives the
// same numbers on every compiler and standard library, which std:: distributions do not, so
// that shuffles, crops and window offsets are reproducible across builds.
//
// Plain value type; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mploader::detail {

inline constexpr uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ULL;

// The splitmix64 finaliser: a strong 64-bit mixer, so nearby inputs give unrelated outputs.
// Also the fingerprint step of the bucket samplers (h = mix64(h ^ value)).
inline uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One splitmix64 output for state `z` (the state advanced once).
inline uint64_t splitmix64(uint64_t z) { return mix64(z + kSplitMixGamma); }

// The one seed mixer: `value` mixed into `seed`, splitmix64(splitmix64(seed) ^ value). Chained
// to derive a seed from several values, e.g. mix_seed(mix_seed(seed, epoch), worker). XOR is
// symmetric, so mix_seed(value, seed) is the other order some plans have always used (the
// value hashed first); each call site keeps its order, since changing it would change every
// saved epoch plan.
inline uint64_t mix_seed(uint64_t seed, uint64_t value) {
  return splitmix64(splitmix64(seed) ^ value);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t out = splitmix64(state_);
    state_ += kSplitMixGamma;
    return out;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // [0, n), n >= 1, without modulo bias (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    for (;;) {
      const unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
      if (static_cast<uint64_t>(m) >= (0 - n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }
  int below(int n) { return static_cast<int>(below(static_cast<uint64_t>(n))); }
  // Fisher-Yates, from the back: the same order with any compiler and standard library.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(below(static_cast<uint64_t>(i)));
      std::swap(items[i - 1], items[j]);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace mploader::detail
