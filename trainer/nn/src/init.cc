// init.cc — init.h: splitmix64 seeding and portable uniform draws from mt19937_64.
#include "init.h"

#include <cmath>
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

void fill_normal(std::span<float> values, double std, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto uniform_pm1 = [&gen] { return 2.0 * (static_cast<double>(gen() >> 11) * 0x1.0p-53) - 1.0; };
  for (std::size_t i = 0; i < values.size(); i += 2) {
    double a = 0.0, b = 0.0, r2 = 0.0;
    do {
      a = uniform_pm1();
      b = uniform_pm1();
      r2 = a * a + b * b;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std * std::sqrt(-2.0 * std::log(r2) / r2);
    values[i] = static_cast<float>(a * f);
    if (i + 1 < values.size()) values[i + 1] = static_cast<float>(b * f);
  }
}

}  // namespace mirror::nn::detail
