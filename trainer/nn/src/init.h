// init.h (private) — deterministic parameter initialisation: a std::mt19937_64 (whose output sequence
// the C++ standard fixes) seeded from (model seed, parameter index) by splitmix64, and a uniform draw
// built from its raw bits, so the same seed gives bit-identical values on every machine and compiler.
#pragma once

#include <cstdint>
#include <span>

namespace mirror::nn::detail {

// Seed of parameter `index` of a model initialised with `seed`.
std::uint64_t param_seed(std::uint64_t seed, std::uint64_t index);

// values[i] = U(-bound, bound) from mt19937_64(seed): u = (x >> 11) * 2^-53, v = bound * (2u - 1).
void fill_uniform(std::span<float> values, float bound, std::uint64_t seed);

// values[i] = N(0, std²) from mt19937_64(seed) by Marsaglia's polar method on such uniforms (in double; the
// values depend on libm's log only, which glibc computes to within half an ulp or so, so a float rounding of them
// is the same on every machine in practice). GPT-2's initialisation.
void fill_normal(std::span<float> values, double std, std::uint64_t seed);

}  // namespace mirror::nn::detail
