// test_shm_copy_probe.cc — kAuto's copy-path probe on the shared-memory transport (shm_copy_probe.h): it
// runs lazily at the first ordinary allreduce of 32 KiB or more and never below, or with the probe off or
// another mode; every rank sees the same figures and takes the same path for every call (per-call counters
// compared across ranks with MPI); the path at each band and shape (in place, out of place) is the one the
// shared figures say was faster, and a call where some ranks are in place and some not takes the
// out-of-place choice on every rank; the
// test seam's injected figures, different per rank, are combined as their maximum over ranks (computed here
// with MPI_Allreduce) and the calls really take the path they decide; results stay exact throughout (the
// serial exact-sum reference of collective_checks); bad injected figures fail clearly at construction.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "shm_communicator.h"
#include "shm_copy_probe.h"

namespace mirror::coll::testing {
namespace {

using detail::figure_index;
using detail::kCopyProbeBytes;
using detail::kCopyProbeFigures;
using detail::kCopyProbeSizes;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

CommOptions shm_options() {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  o.backend = parse_backend("host", "shm");
  return o;
}

// Injected figures: figure k (figure_index: in place, then out of place) takes single copy where
// `single_bands` has bit k. Every rank's figures differ (so only their maximum over ranks is shared); at
// figure `overruled` every rank but the last says single copy was faster, and the last rank's slow
// single-copy time must win: that band and shape stage.
std::vector<ShmCopyProbeFigure> injected(unsigned single_bands, int overruled) {
  const int r = world_rank(), last = world_size() - 1;
  std::vector<ShmCopyProbeFigure> f(kCopyProbeFigures);
  for (int i = 0; i < kCopyProbeFigures; ++i) {
    f[i].bytes = kCopyProbeBytes[i % kCopyProbeSizes];
    f[i].in_place = i < kCopyProbeSizes;
    f[i].staged_us = 100.0 + 10.0 * r;
    const bool single = (single_bands >> i & 1u) != 0 || i == overruled;
    f[i].single_us = single ? 40.0 + 5.0 * r : 300.0 - r;
    if (i == overruled && r == last) f[i].single_us = 900.0;
  }
  return f;
}

// The same on every rank (compared with MPI): false names the first difference.
bool same_on_every_rank(std::uint64_t value) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return std::all_of(all.begin(), all.end(), [&](std::uint64_t v) { return v == all[0]; });
}

// One checked float32 sum allreduce of `bytes` (in place on this rank or not); whether it took the
// single-copy path (the counter).
bool took_single(Communicator& c, std::size_t bytes, bool in_place) {
  const std::uint64_t before = shm_staging_counts(c).single;
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kSum, bytes / sizeof(float), in_place))
      << bytes << " bytes";
  const bool single = shm_staging_counts(c).single > before;
  EXPECT_TRUE(same_on_every_rank(single ? 1 : 0)) << "ranks took different paths at " << bytes << " bytes";
  return single;
}

struct Probe {
  ShmCopyProbe figures;
  // Calls of each band (its low edge, its probed size, its last bytes) in each shape; and with only rank 0
  // in place, which takes the out-of-place choice.
  void expect_paths_follow(Communicator& c, const std::string& what) const {
    ASSERT_EQ(figures.figures.size(), static_cast<std::size_t>(kCopyProbeFigures)) << what;
    for (const ShmCopyProbeFigure& f : figures.figures) {
      std::vector<std::size_t> sizes{f.band_lo, f.bytes};
      if (f.band_hi) sizes.push_back(f.band_hi - 64);
      const char* shape = f.in_place ? " in place" : " out of place";
      for (std::size_t bytes : sizes)
        EXPECT_EQ(took_single(c, bytes, f.in_place), f.single) << what << ": " << bytes << " bytes" << shape;
      if (!f.in_place) {
        EXPECT_EQ(took_single(c, f.bytes, world_rank() == 0), f.single)
            << what << ": " << f.bytes << " bytes, only rank 0 in place";
      }
    }
    for (const bool in_place : {true, false})
      EXPECT_FALSE(took_single(c, 16 * 1024, in_place)) << what << ": below the first band stages";
  }
};

TEST(CopyProbe, BandsSplitAtTheGeometricMidpoints) {
  using detail::CopyBands;
  EXPECT_EQ(CopyBands::band_of(0), -1);
  EXPECT_EQ(CopyBands::band_of((std::size_t{32} << 10) - 1), -1);
  const std::size_t edges[] = {std::size_t{32} << 10, std::size_t{256} << 10, std::size_t{2} << 20, std::size_t{8} << 20};
  for (int i = 0; i < kCopyProbeSizes; ++i) {
    EXPECT_EQ(CopyBands::band_of(edges[i]), i);
    EXPECT_EQ(CopyBands::band_of(kCopyProbeBytes[i]), i);  // every probed size decides its own band
    if (i + 1 < kCopyProbeSizes) {
      EXPECT_EQ(CopyBands::band_of(edges[i + 1] - 1), i);
    }
  }
  EXPECT_EQ(CopyBands::band_of(std::size_t{1} << 40), kCopyProbeSizes - 1);
  // Ties stage; strictly faster single copy takes the band; each shape from its own figures.
  detail::CopyProbeTimes t;
  t.staged_ns = {10, 10, 10, 10, 10, 10, 10, 10};
  t.single_ns = {10, 9, 11, 1, 9, 10, 1, 11};
  const CopyBands b(t, CopyBands::Source::kMeasured, 1);
  const bool in_place[] = {false, true, false, true}, out_of_place[] = {true, false, true, false};
  for (int i = 0; i < kCopyProbeSizes; ++i) {
    EXPECT_EQ(b.single(i, true), in_place[i]) << "band " << i << " in place";
    EXPECT_EQ(b.single(i, false), out_of_place[i]) << "band " << i << " out of place";
  }
}

TEST(CopyProbe, MeasuredOnceLazilyAndEveryRankFollowsTheSharedFigures) {
  auto c = make_communicator(shm_options());
  ASSERT_TRUE(shm_staging_counts(*c).single_permitted) << "cross-memory attach refused on this machine?";
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, 1000, false));
  EXPECT_TRUE(shm_copy_probe(*c).figures.empty()) << "the probe ran below 32 KiB";
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, 40000, true));
  const Probe p{shm_copy_probe(*c)};
  ASSERT_EQ(p.figures.figures.size(), static_cast<std::size_t>(kCopyProbeFigures));
  EXPECT_FALSE(p.figures.injected);
  EXPECT_GT(p.figures.cost_us, 0.0);
  for (const ShmCopyProbeFigure& f : p.figures.figures) {
    // Shared: the same figures on every rank; the choice is the faster of them.
    EXPECT_TRUE(same_on_every_rank(static_cast<std::uint64_t>(f.staged_us * 1000.0 + 0.5))) << f.bytes;
    EXPECT_TRUE(same_on_every_rank(static_cast<std::uint64_t>(f.single_us * 1000.0 + 0.5))) << f.bytes;
    EXPECT_GT(f.staged_us, 0.0);
    EXPECT_GT(f.single_us, 0.0);
    EXPECT_EQ(f.single, f.single_us < f.staged_us) << f.bytes << ": staged " << f.staged_us << " single " << f.single_us;
  }
  p.expect_paths_follow(*c, "measured");
  // It ran once: the figures stay.
  const ShmCopyProbe again = shm_copy_probe(*c);
  for (int i = 0; i < kCopyProbeFigures; ++i) EXPECT_EQ(again.figures[i].staged_us, p.figures.figures[i].staged_us);
}

TEST(CopyProbe, InjectedFiguresAreSharedAsTheirMaximumAndDecideThePath) {
  // Bits: in place (low 4), out of place (high 4). Bands where the shapes differ: 0 and 3 in the first, 0, 1
  // and 2 in the second. Overruled by the last rank: 4 MiB in place in the first; 16 MiB out of place (on
  // from 8 MiB) in the second.
  for (const auto& [single_bands, overruled] :
       {std::pair<unsigned, int>{0b0011'1010u, figure_index(2, true)}, {0b0010'0101u, figure_index(3, false)}}) {
    CommOptions o = shm_options();
    o.shm_copy_probe_figures_for_testing = injected(single_bands, overruled);
    auto c = make_communicator(o);
    ASSERT_TRUE(shm_staging_counts(*c).single_permitted);
    EXPECT_TRUE(shm_copy_probe(*c).figures.empty());
    // The first call in range runs the probe, and takes the path it decides.
    const std::string what = "injected bands " + std::to_string(single_bands);
    EXPECT_EQ(took_single(*c, kCopyProbeBytes[1], true), (single_bands & 2u) != 0) << what;
    const Probe p{shm_copy_probe(*c)};
    ASSERT_EQ(p.figures.figures.size(), static_cast<std::size_t>(kCopyProbeFigures));
    EXPECT_TRUE(p.figures.injected);
    // The reference: every rank's injected figures, maximum over ranks (MPI).
    const auto mine = o.shm_copy_probe_figures_for_testing;
    for (int i = 0; i < kCopyProbeFigures; ++i) {
      double local[2] = {mine[i].staged_us, mine[i].single_us}, max[2] = {0, 0};
      MPI_Allreduce(local, max, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      const ShmCopyProbeFigure& f = p.figures.figures[i];
      EXPECT_EQ(f.staged_us, max[0]) << what << " band " << i;
      EXPECT_EQ(f.single_us, max[1]) << what << " band " << i;
      EXPECT_EQ(f.single, max[1] < max[0]) << what << " band " << i;
      EXPECT_EQ(f.single, (single_bands >> i & 1u) != 0) << what << " band " << i;
      EXPECT_EQ(f.in_place, i < kCopyProbeSizes) << what << " band " << i;
    }
    p.expect_paths_follow(*c, what);
  }
}

TEST(CopyProbe, NotRunWhenOffOrInAnotherMode) {
  CommOptions off = shm_options();
  off.shm_copy_probe = false;
  CommOptions staged = shm_options();
  staged.shm_copy = ShmCopy::kStaged;
  CommOptions single = shm_options();
  single.shm_copy = ShmCopy::kSingle;
  for (const CommOptions& o : {off, staged, single}) {
    auto c = make_communicator(o);
    EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
    EXPECT_TRUE(shm_copy_probe(*c).figures.empty()) << to_string(o.shm_copy);
  }
  // Off: the fixed bands (2 MiB: single copy at every rank count).
  auto c = make_communicator(off);
  EXPECT_TRUE(took_single(*c, std::size_t{2} << 20, false));
  // Refused cross-memory attach: nothing to choose, no probe.
  CommOptions refused = shm_options();
  refused.shm_copy_refused_for_testing = world_rank() == world_size() - 1;
  auto r = make_communicator(refused);
  EXPECT_FALSE(took_single(*r, std::size_t{1} << 20, true));
  EXPECT_TRUE(shm_copy_probe(*r).figures.empty());
}

TEST(CopyProbe, BadInjectedFiguresFailAtConstruction) {
  CommOptions o = shm_options();
  o.shm_copy_probe_figures_for_testing = injected(0, -1);
  o.shm_copy_probe_figures_for_testing[1].bytes = 12345;
  try {
    auto c = make_communicator(o);
    ADD_FAILURE() << "accepted figures for the wrong size";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("shm_copy_probe_figures_for_testing[1] is for 12345 bytes in place; "
                                         "expected 1048576 bytes in place"),
              std::string::npos)
        << e.what();
  }
  o.shm_copy_probe_figures_for_testing = injected(0, -1);
  o.shm_copy_probe_figures_for_testing[5].in_place = true;
  try {
    auto c = make_communicator(o);
    ADD_FAILURE() << "accepted an in-place figure where an out-of-place one belongs";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("[5] is for 1048576 bytes in place; expected 1048576 bytes out of place"),
              std::string::npos)
        << e.what();
  }
  o.shm_copy_probe_figures_for_testing.resize(kCopyProbeSizes);
  EXPECT_THROW(make_communicator(o), Error) << "accepted in-place figures only";
}

}  // namespace
}  // namespace mirror::coll::testing
