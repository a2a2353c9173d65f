// shm_copy_probe.h — CopyBands: ShmCopy::kAuto's measured choice, per size band and per call shape (in place,
// out of place), between the staged and the single-copy allreduce on ordinary buffers (the probe itself is
// ShmCommunicator::probe_copy_paths, shm_copy_probe.cc).
//
// Why measured: which path wins depends on the CPU, the hypervisor's placement of the ranks' cores and the
// load (cross-core line transfers of the staging buffers against cross-memory attach's page pinning), so no
// fixed bands suit every machine. So at the first ordinary allreduce of at
// least kCopyProbeLowestBytes (not at construction: short-lived communicators never pay), every rank times
// both paths, alternated, on private zeroed float32 buffers at each of kCopyProbeBytes, in place and out of
// place, keeps its best of kCopyProbeRepeats runs, and the transport's own small allreduce (max) gives every
// rank the slowest rank's figures: the choice is made from values all ranks share, so every rank takes the
// same path for every call. Band i covers the call bytes [kCopyBandLow[i], kCopyBandLow[i + 1]) (the last
// has no end), and takes, for each shape, the path that was faster at kCopyProbeBytes[i] in that shape.
// Why both shapes: the two paths are different algorithms in and out of place (single copy in place must not
// let a peer read what it already overwrote; the staged path out of place streams its output from 16 MiB),
// and at one size single copy can win out of place while staged wins in place (docs/collectives-shm.md,
// "kAuto's probe"). Where a band's two shapes disagree, the call syncs once first and every rank
// picks by whether every rank is in place (ShmCommunicator::every_rank_in_place), a value all ranks share.
// Below the first band the staged single-sync path stays (fixed: at those sizes single copy's two syncs and
// two kernel calls per peer cost more than the bytes they save).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

constexpr int kCopyProbeSizes = 4;
// The probed allreduce sizes, and the lower edge of the band each decides (geometric midpoints).
constexpr std::array<std::size_t, kCopyProbeSizes> kCopyProbeBytes{
    std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20};
constexpr std::array<std::size_t, kCopyProbeSizes> kCopyBandLow{
    std::size_t{32} << 10, std::size_t{256} << 10, std::size_t{2} << 20, std::size_t{8} << 20};
constexpr std::size_t kCopyProbeLowestBytes = kCopyBandLow[0];
// The probe's figures: kCopyProbeSizes in place, then kCopyProbeSizes out of place (figure index
// shape * kCopyProbeSizes + size index, shape 0 in place, 1 out of place).
constexpr int kCopyProbeFigures = 2 * kCopyProbeSizes;
constexpr int figure_index(int size_index, bool in_place) { return (in_place ? 0 : kCopyProbeSizes) + size_index; }
constexpr bool figure_in_place(int figure) { return figure < kCopyProbeSizes; }
constexpr int figure_size_index(int figure) { return figure % kCopyProbeSizes; }
// Timed runs of each path at each probed size (alternated; the best counts): more where they are cheap and
// the two paths come closest, fewer at 16 MiB, where each run costs milliseconds and the gap was wide.
constexpr std::array<int, kCopyProbeSizes> kCopyProbeRepeats{5, 5, 3, 2};

// What statistics() reports about the probe, in this order (appended to the shm and hierarchical rows):
// copy_probe (0 not run, 1 measured, 2 figures injected by the test seam), copy_probe_ns (its cost on this
// rank), copy_probe_single_bands (bit figure_index(i, in_place): that band and shape take single copy), then
// per figure the shared times copy_probe_staged_ns_<size>[_oop], copy_probe_single_ns_<size>[_oop].
constexpr std::array<const char*, 3 + 2 * kCopyProbeFigures> kCopyProbeStatistics{
    "copy_probe",          "copy_probe_ns",          "copy_probe_single_bands", "copy_probe_staged_ns_64K",
    "copy_probe_single_ns_64K", "copy_probe_staged_ns_1M", "copy_probe_single_ns_1M", "copy_probe_staged_ns_4M",
    "copy_probe_single_ns_4M",  "copy_probe_staged_ns_16M", "copy_probe_single_ns_16M",
    "copy_probe_staged_ns_64K_oop", "copy_probe_single_ns_64K_oop", "copy_probe_staged_ns_1M_oop",
    "copy_probe_single_ns_1M_oop", "copy_probe_staged_ns_4M_oop", "copy_probe_single_ns_4M_oop",
    "copy_probe_staged_ns_16M_oop", "copy_probe_single_ns_16M_oop"};
// `names` followed by kCopyProbeStatistics (for the backend table rows).
std::vector<const char*> with_copy_probe_statistics(std::vector<const char*> names);

// Throws kInvalidArgument unless `figures` (CommOptions::shm_copy_probe_figures_for_testing) is empty or
// holds kCopyProbeFigures figures, in figure_index order (bytes and in_place as that order says), with finite
// times >= 0.
void check_copy_probe_figures(const std::vector<ShmCopyProbeFigure>& figures);

// Per figure (figure_index), the time of each path (ns): one rank's, or the maximum over ranks.
struct CopyProbeTimes {
  std::array<std::uint64_t, kCopyProbeFigures> staged_ns{}, single_ns{};
};

class CopyBands {
 public:
  enum class Source : std::uint8_t { kNone = 0, kMeasured = 1, kInjected = 2 };

  CopyBands() = default;  // not probed: kAuto keeps its fixed bands
  // From the figures every rank shares; cost_ns: what the probe took on this rank.
  CopyBands(const CopyProbeTimes& shared, Source source, std::uint64_t cost_ns);

  // The band holding calls of `bytes`, or -1 below the first.
  static int band_of(std::size_t bytes);

  bool probed() const { return source_ != Source::kNone; }
  // Whether band `band` (>= 0) takes single copy for calls of that shape: it was strictly faster at that
  // band's probed size in that shape.
  bool single(int band, bool in_place) const { return (single_bands_ >> figure_index(band, in_place) & 1u) != 0; }
  // copy_probe, copy_probe_ns, copy_probe_single_bands and the figures, as kCopyProbeStatistics names them.
  std::array<std::uint64_t, kCopyProbeStatistics.size()> statistic_values() const;

 private:
  CopyProbeTimes times_{};
  Source source_ = Source::kNone;
  std::uint64_t cost_ns_ = 0;
  std::uint32_t single_bands_ = 0;
};

}  // namespace mirror::coll::detail
