// init.cc — init.h: splitmix64 seeding and portable uniform draws from mt19937_64.
#include "init.h"

#include <random>

namespace mirror::nn::detail {

std::uint64_t param_seed(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);  // splitmix64 of the (seed, index) pair
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_uniform(std::span<float> values, float bound, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const double b = bound;
  for (float& v : values) {
    const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    v = static_cast<float>(b * (2.0 * u - 1.0));
  }
}

}  // namespace mirror::nn::detail
