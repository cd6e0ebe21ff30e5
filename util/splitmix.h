// splitmix64 (Steele, Lea and Flood): a portable generator and mixer. The same seed gives the
// same numbers on every compiler and standard library, which std:: distributions do not, so
// that shuffles, crops and window offsets are reproducible across builds.
//
// Plain value type; no shared state.
#pragma once

#include <cstdint>

namespace mploader::detail {

// One splitmix64 output for state `z` (the state advanced once): a strong 64-bit mixer, so
// nearby inputs give unrelated outputs.
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t out = splitmix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
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

 private:
  uint64_t state_;
};

}  // namespace mploader::detail
