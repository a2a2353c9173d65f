// synth.cc — write_synthetic: Gaussian-cluster classification data of any size and sample shape (flat
// features or images [H, W] / [C, H, W]), deterministic per seed.
#include <cmath>

#include "mirror/data/convert.h"
#include "mirror/error.h"
#include "rng.h"

namespace mirror::data {

namespace {

// Standard normal from two uniforms (Box-Muller); our own so the data is identical everywhere.
double normal(Rng& rng) {
  double u1 = rng.uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * rng.uniform());
}

// The sample shape: `shape` when given (2 or 3 positive dimensions), else {features}.
std::vector<int64_t> sample_shape(const SynthOptions& s) {
  if (s.shape.empty()) return {s.features};
  MIRROR_CHECK(s.shape.size() == 2 || s.shape.size() == 3, kInvalidArgument,
               "synthetic --shape takes H,W or C,H,W, got " << s.shape.size() << " dimension(s)");
  int64_t product = 1;
  for (int64_t d : s.shape) {
    MIRROR_CHECK(d >= 1 && d <= (1 << 16), kInvalidArgument,
                 "synthetic --shape dimensions must be in 1..65536, got " << d);
    product *= d;
  }
  MIRROR_CHECK(s.features == 0 || s.features == product, kInvalidArgument,
               "synthetic --features " << s.features << " does not match --shape (" << product
               << " values per sample): give one of them");
  return s.shape;
}

}  // namespace

std::vector<std::string> write_synthetic(const std::string& out, const SynthOptions& given, const WriteOptions& options) {
  SynthOptions s = given;
  const std::vector<int64_t> shape = sample_shape(s);
  s.features = 1;
  for (int64_t d : shape) s.features *= d;
  MIRROR_CHECK(s.train >= 1 && s.test >= 1, kInvalidArgument,
               "synthetic data needs --train >= 1 and --test >= 1, got " << s.train << " and " << s.test);
  MIRROR_CHECK(s.features >= 1 && s.classes >= 2, kInvalidArgument,
               "synthetic data needs --features >= 1 and --classes >= 2, got " << s.features << " and " << s.classes);
  MIRROR_CHECK(s.spread > 0, kInvalidArgument, "synthetic cluster spread must be > 0, got " << s.spread);
  // Centres: standard normal per feature; samples add noise of standard deviation `spread` per feature.
  Rng centre_rng(mix_key(s.seed, 1));
  std::vector<float> centres(static_cast<std::size_t>(s.classes * s.features));
  for (float& c : centres) c = static_cast<float>(normal(centre_rng));
  DatasetHeader header;
  header.num_classes = s.classes;
  header.sample_shape = shape;
  header.x_dtype = DType::kFloat32;
  DatasetWriter writer(out, header, s.train, s.test, options);
  constexpr int64_t kBlock = 4096;
  std::vector<float> x;
  std::vector<int32_t> y;
  int which = 0;
  for (const auto& [name, n] : {std::pair<const char*, int64_t>{"train", s.train}, {"test", s.test}}) {
    Rng rng(mix_key(s.seed, 2, static_cast<uint64_t>(which++)));
    for (int64_t first = 0; first < n; first += kBlock) {
      const int64_t count = std::min(kBlock, n - first);
      x.resize(static_cast<std::size_t>(count * s.features));
      y.resize(static_cast<std::size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        const auto c = static_cast<int32_t>(rng.below(static_cast<uint64_t>(s.classes)));
        y[static_cast<std::size_t>(i)] = c;
        for (int64_t f = 0; f < s.features; ++f) {
          x[static_cast<std::size_t>(i * s.features + f)] = static_cast<float>(
              centres[static_cast<std::size_t>(c * s.features + f)] + s.spread * normal(rng));
        }
      }
      writer.append(name, x.data(), y.data(), count);
    }
  }
  writer.close();
  return writer.files();
}

}  // namespace mirror::data
