// test_shm_reduce.cc — the shared-memory reduction kernel (collectives/src/shm_reduce.h) in one process, against
// a plain serial loop: every dtype and op, 1 to 5 sources, counts around its 2048-element block, outputs
// apart from the sources and in place (the output one source, the second output another), and every
// combination of plain and streaming stores, bit for bit. Both builds the library has here: the one
// shm_reduce dispatches to (named in the output) and the baseline one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "mirror/coll/half.h"
#include "shm_reduce.h"

namespace mirror::coll::detail {
namespace {

using Kernel = void (*)(void*, void*, const void* const*, int, std::size_t, DataType, ReduceOp, int, ReduceStores);

void dispatched(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                ReduceOp op, int ranks, ReduceStores stores) {
  shm_reduce(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
}

// The reference: elements combined in rank order; integers wrap (through the unsigned type) and avg
// truncates; 16-bit values are widened, combined in float32 and rounded once.
template <typename T>
struct Wide {  // the type integer sums and products wrap in
  using type = T;
};
template <typename T>
  requires std::is_integral_v<T>
struct Wide<T> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
T combine(ReduceOp op, T a, T b) {
  using U = typename Wide<T>::type;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case ReduceOp::kProd: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ReduceOp::kMin: return b < a ? b : a;
    case ReduceOp::kMax: return a < b ? b : a;
  }
  return a;
}

template <typename T>
std::vector<T> reference_typed(const std::vector<std::vector<T>>& src, ReduceOp op) {
  std::vector<T> out(src[0].size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v = src[0][i];
    for (std::size_t k = 1; k < src.size(); ++k) v = combine(op, v, src[k][i]);
    if (op == ReduceOp::kAvg && src.size() > 1) v = v / static_cast<T>(src.size());
    out[i] = v;
  }
  return out;
}

std::vector<std::uint16_t> reference_16bit(const std::vector<std::vector<std::uint16_t>>& src, ReduceOp op, bool half) {
  auto widen = [half](std::uint16_t h) { return half ? half_to_float(h) : bfloat16_to_float(h); };
  std::vector<std::uint16_t> out(src[0].size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    float v = widen(src[0][i]);
    for (std::size_t k = 1; k < src.size(); ++k) v = combine(op, v, widen(src[k][i]));
    if (op == ReduceOp::kAvg && src.size() > 1) v = v / static_cast<float>(src.size());
    out[i] = half ? float_to_half(v) : float_to_bfloat16(v);
  }
  return out;
}

// Sources whose sums round (floats in [-4, 4] with full mantissas), wrap (integers over the whole range,
// negative ones included, so avg truncates both ways), and stay finite (no NaN + NaN, whose payload is the
// hardware's choice).
template <typename T>
std::vector<std::vector<T>> sources(int nsrc, std::size_t count, std::mt19937& rng) {
  std::vector<std::vector<T>> src(static_cast<std::size_t>(nsrc), std::vector<T>(count));
  std::uniform_real_distribution<double> uniform(-4.0, 4.0);
  for (auto& s : src) {
    for (T& v : s) {
      if constexpr (std::is_integral_v<T>) v = static_cast<T>(static_cast<std::uint64_t>(rng()) << 32 | rng());
      else v = static_cast<T>(uniform(rng));
    }
  }
  return src;
}

std::vector<std::vector<std::uint16_t>> sources_16bit(int nsrc, std::size_t count, bool half, std::mt19937& rng) {
  const auto wide = sources<float>(nsrc, count, rng);
  std::vector<std::vector<std::uint16_t>> src(wide.size(), std::vector<std::uint16_t>(count));
  for (std::size_t k = 0; k < wide.size(); ++k) {
    if (half) float_to_half(wide[k].data(), src[k].data(), count);
    else float_to_bfloat16(wide[k].data(), src[k].data(), count);
  }
  return src;
}

// Where the outputs go: apart from the sources, or in place (dst is the first or the last source, dst2 the
// last one, as the direct and in-place paths call it).
enum class Layout { kApart, kApartTwo, kOnFirst, kOnLast, kOnFirstAndLast };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kApart: return "apart";
    case Layout::kApartTwo: return "apart, two outputs";
    case Layout::kOnFirst: return "dst = first source";
    case Layout::kOnLast: return "dst = last source";
    case Layout::kOnFirstAndLast: return "dst = first, dst2 = last source";
  }
  return "?";
}

// One call of `kernel` on copies of `src` (an in-place layout overwrites them), checked against `want`.
template <typename T>
void check_one(Kernel kernel, const std::vector<std::vector<T>>& src, const std::vector<T>& want, DataType type,
               ReduceOp op, Layout layout, ReduceStores stores, const std::string& what) {
  const int nsrc = static_cast<int>(src.size());
  const std::size_t count = want.size();
  std::vector<std::vector<T>> copy = src;
  std::vector<T> apart(count), apart2(count);
  std::vector<const void*> ptrs;
  for (const auto& s : copy) ptrs.push_back(s.data());
  T* dst = apart.data();
  T* dst2 = nullptr;
  if (layout == Layout::kApartTwo) dst2 = apart2.data();
  if (layout == Layout::kOnFirst || layout == Layout::kOnFirstAndLast) dst = copy.front().data();
  if (layout == Layout::kOnLast) dst = copy.back().data();
  if (layout == Layout::kOnFirstAndLast) dst2 = copy.back().data();
  kernel(dst, dst2, ptrs.data(), nsrc, count, type, op, nsrc, stores);
  shm_stream_fence();
  const std::string where = what + ", " + layout_name(layout) + ", stores " + (stores.stream_dst ? "streamed" : "plain") +
                            "/" + (stores.stream_dst2 ? "streamed" : "plain");
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(std::memcmp(&dst[i], &want[i], sizeof(T)), 0) << where << ": element " << i;
    if (dst2 != nullptr) {
      ASSERT_EQ(std::memcmp(&dst2[i], &want[i], sizeof(T)), 0) << where << ": dst2 element " << i;
    }
  }
}

template <typename T>
void check_all_calls(Kernel kernel, const std::vector<std::vector<T>>& src, const std::vector<T>& want, DataType type,
                     ReduceOp op, const std::string& what) {
  for (const Layout layout :
       {Layout::kApart, Layout::kApartTwo, Layout::kOnFirst, Layout::kOnLast, Layout::kOnFirstAndLast}) {
    if (layout == Layout::kOnFirstAndLast && src.size() < 2) continue;
    for (const bool s1 : {false, true}) {
      for (const bool s2 : {false, true}) check_one(kernel, src, want, type, op, layout, ReduceStores{s1, s2}, what);
    }
  }
}

struct Build {
  const char* name;
  Kernel kernel;
};

std::vector<Build> builds() {
  return {{shm_reduce_isa(), dispatched}, {"generic", shm_reduce_generic}};
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd};
constexpr std::size_t kCounts[] = {1, 7, 2047, 2048, 2049, 4109};

template <typename T>
void check_type(DataType type) {
  std::mt19937 rng(17);
  for (const Build& build : builds()) {
    for (const ReduceOp op : kOps) {
      for (int nsrc = 1; nsrc <= 5; ++nsrc) {
        for (const std::size_t count : kCounts) {
          const auto src = sources<T>(nsrc, count, rng);
          const std::string what = std::string(build.name) + " " + to_string(type) + " " + to_string(op) +
                                   ", " + std::to_string(nsrc) + " sources, " + std::to_string(count) + " elements";
          check_all_calls(build.kernel, src, reference_typed(src, op), type, op, what);
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(ShmReduce, NamesItsBuild) {
  std::printf("[ shm reduce ] shm_reduce uses the %s build\n", shm_reduce_isa());
  RecordProperty("shm_reduce_isa", shm_reduce_isa());
}
TEST(ShmReduce, Float32EqualsTheSerialLoopOnEveryPath) { check_type<float>(DataType::kFloat32); }
TEST(ShmReduce, Float64EqualsTheSerialLoopOnEveryPath) { check_type<double>(DataType::kFloat64); }
TEST(ShmReduce, Int32EqualsTheSerialLoopOnEveryPath) { check_type<std::int32_t>(DataType::kInt32); }
TEST(ShmReduce, Int64EqualsTheSerialLoopOnEveryPath) { check_type<std::int64_t>(DataType::kInt64); }

TEST(ShmReduce, SixteenBitTypesEqualTheSerialLoopOnEveryPath) {
  std::mt19937 rng(23);
  for (const DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool half = type == DataType::kFloat16;
    for (const Build& build : builds()) {
      for (const ReduceOp op : kOps) {
        for (int nsrc = 1; nsrc <= 5; ++nsrc) {
          for (const std::size_t count : kCounts) {
            const auto src = sources_16bit(nsrc, count, half, rng);
            const std::string what = std::string(build.name) + " " + to_string(type) + " " + to_string(op) + ", " +
                                     std::to_string(nsrc) + " sources, " + std::to_string(count) + " elements";
            check_all_calls(build.kernel, src, reference_16bit(src, op, half), type, op, what);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mirror::coll::detail
