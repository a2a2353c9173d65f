// rng.h — the data library's own deterministic random numbers (private): splitmix64 and an unbiased
// bounded draw, so that permutations are identical on every rank, compiler and standard library
// (std::shuffle and the std distributions are not specified bit-for-bit).
#pragma once

#include <cstdint>
#include <vector>

namespace mirror::data {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A stream of 64-bit values from a key (splitmix64 over a counter).
class Rng {
 public:
  explicit Rng(uint64_t key) : state_(splitmix64(key)) {}
  uint64_t next() { return splitmix64(state_++); }
  // Uniform in [0, bound), unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// Key of a (seed, a, b) triple, e.g. (seed, epoch, purpose).
inline uint64_t mix_key(uint64_t seed, uint64_t a, uint64_t b = 0) {
  return splitmix64(splitmix64(seed ^ 0x6d6972726f72ULL) ^ splitmix64(a + 0x51ULL) ^ (splitmix64(b + 0x77ULL) << 1));
}

// Fisher-Yates permutation of 0..n-1 from a key.
inline std::vector<int64_t> permutation(int64_t n, uint64_t key) {
  std::vector<int64_t> p(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  Rng rng(key);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

}  // namespace mirror::data
