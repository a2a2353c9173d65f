// init.cc — init.h: splitmix64 seeding and portable uniform draws from mt19937_64.
#include "init.h"

#include <random>

#include "splitmix64.h"

namespace mirror::nn::detail {

std::uint64_t param_seed(std::uint64_t seed, std::uint64_t index) {
  return splitmix64(seed + 0x9e3779b97f4a7c15ull * index);  // output index + 1 of a splitmix64 generator from `seed`
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
