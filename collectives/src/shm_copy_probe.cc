// shm_copy_probe.cc — kAuto's copy-path probe: CopyBands (the bands from the shared figures) and
// ShmCommunicator::probe_copy_paths (timing both allreduce paths, sharing the figures over the segment).
#include "shm_copy_probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mirror/error.h"
#include "shm_communicator.h"

namespace mirror::coll::detail {

std::vector<const char*> with_copy_probe_statistics(std::vector<const char*> names) {
  names.insert(names.end(), kCopyProbeStatistics.begin(), kCopyProbeStatistics.end());
  return names;
}

CopyBands::CopyBands(const CopyProbeTimes& shared, Source source, std::uint64_t cost_ns)
    : times_(shared), source_(source), cost_ns_(cost_ns) {
  for (int i = 0; i < kCopyProbeFigures; ++i)
    if (times_.single_ns[i] < times_.staged_ns[i]) single_bands_ |= 1u << i;
}

int CopyBands::band_of(std::size_t bytes) {
  int band = -1;
  for (int i = 0; i < kCopyProbeSizes; ++i)
    if (bytes >= kCopyBandLow[i]) band = i;
  return band;
}

std::array<std::uint64_t, kCopyProbeStatistics.size()> CopyBands::statistic_values() const {
  std::array<std::uint64_t, kCopyProbeStatistics.size()> v{};
  v[0] = static_cast<std::uint64_t>(source_);
  v[1] = cost_ns_;
  v[2] = single_bands_;
  for (int i = 0; i < kCopyProbeFigures; ++i) {
    v[3 + 2 * i] = times_.staged_ns[i];
    v[4 + 2 * i] = times_.single_ns[i];
  }
  return v;
}

void check_copy_probe_figures(const std::vector<ShmCopyProbeFigure>& figures) {
  if (figures.empty()) return;
  MIRROR_CHECK(figures.size() == kCopyProbeFigures, kInvalidArgument,
               "CommOptions::shm_copy_probe_figures_for_testing has "
                   << figures.size() << " figures; expected " << kCopyProbeFigures
                   << " (one per probed size in place, then one per probed size out of place)");
  for (int i = 0; i < kCopyProbeFigures; ++i) {
    const ShmCopyProbeFigure& f = figures[i];
    const bool in_place = figure_in_place(i);
    const std::size_t bytes = kCopyProbeBytes[figure_size_index(i)];
    MIRROR_CHECK(f.bytes == bytes && f.in_place == in_place, kInvalidArgument,
                 "CommOptions::shm_copy_probe_figures_for_testing[" << i << "] is for " << f.bytes << " bytes "
                     << (f.in_place ? "in place" : "out of place") << "; expected " << bytes << " bytes "
                     << (in_place ? "in place" : "out of place"));
    MIRROR_CHECK(std::isfinite(f.staged_us) && std::isfinite(f.single_us) && f.staged_us >= 0 && f.single_us >= 0,
                 kInvalidArgument,
                 "CommOptions::shm_copy_probe_figures_for_testing[" << i << "]: times must be finite and >= 0 (got "
                                                                    << f.staged_us << ", " << f.single_us << " us)");
  }
}

bool ShmCommunicator::copy_probe_due(const CollectiveCall& call) const {
  return copy_probe_pending_ && call.kind == CallKind::kAllreduce && call.total_bytes(size_) >= kCopyProbeLowestBytes;
}

void ShmCommunicator::probe_copy_paths(const CollectiveCall& at, const OpContext& outer) {
  // Runs after `at`'s first sync: every rank is in this call, so every rank probes here. The probe's calls
  // are numbered on from at.seq (at.seq + 1, + 2, ...: their control-block lines alternate parity as
  // calls do, so a rank never rewrites lines another may still read); `at`'s own lines are published again
  // afterwards, after an odd number of probe calls, with one more sync (two syncs more for this call).
  copy_probe_pending_ = false;
  const auto start = Clock::now();
  OpContext ctx;
  ctx.seq = outer.seq;
  ctx.timeout = options_.timeout;
  ctx.deadline = start + options_.timeout;
  ctx.describe = [this, at] {
    return "the shared-memory copy-path probe (shm_copy_probe.h) at " + at.describe(size_);
  };
  std::uint64_t seq = at.seq;
  // The probe's calls leave the per-path counters and the staging-store measurements as they were.
  const StagingStorePolicy staging = staging_;
  const std::uint64_t single_calls = single_calls_;
  const bool injected = !options_.shm_copy_probe_figures_for_testing.empty();
  const CopyProbeTimes mine = injected ? injected_copy_times() : measure_copy_paths(seq, ctx);
  // Every rank takes the slowest rank's figures (the transport's single-sync allreduce, max).
  std::array<std::uint64_t, 2 * kCopyProbeFigures> local{}, shared{};
  std::copy(mine.staged_ns.begin(), mine.staged_ns.end(), local.begin());
  std::copy(mine.single_ns.begin(), mine.single_ns.end(), local.begin() + kCopyProbeFigures);
  CollectiveCall share;
  share.kind = CallKind::kAllreduce;
  share.send = local.data();
  share.recv = shared.data();
  share.count = local.size();
  share.type = DataType::kInt64;
  share.op = ReduceOp::kMax;
  share.seq = ++seq;
  begin_call(share);
  allreduce_small(share, ctx);
  if ((seq - at.seq) % 2 == 0) {
    CollectiveCall barrier;
    barrier.seq = ++seq;
    begin_call(barrier);
    step(barrier, ctx);
  }
  begin_call(at);
  step(at, outer);
  // Every rank is past the probe's last call: its lines are free, and timeout messages that name a rank's
  // last call must name `at`, not the probe's last.
  control_.publish_in_both_lines(at);
  CopyProbeTimes all;
  std::copy(shared.begin(), shared.begin() + kCopyProbeFigures, all.staged_ns.begin());
  std::copy(shared.begin() + kCopyProbeFigures, shared.end(), all.single_ns.begin());
  staging_ = staging;
  single_calls_ = single_calls;
  const auto cost = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  copy_bands_ = CopyBands(all, injected ? CopyBands::Source::kInjected : CopyBands::Source::kMeasured,
                          static_cast<std::uint64_t>(cost));
}

CopyProbeTimes ShmCommunicator::injected_copy_times() const {
  CopyProbeTimes t;
  const auto& figures = options_.shm_copy_probe_figures_for_testing;
  for (int i = 0; i < kCopyProbeFigures; ++i) {
    t.staged_ns[i] = static_cast<std::uint64_t>(std::llround(figures[i].staged_us * 1000.0));
    t.single_ns[i] = static_cast<std::uint64_t>(std::llround(figures[i].single_us * 1000.0));
  }
  return t;
}

CopyProbeTimes ShmCommunicator::measure_copy_paths(std::uint64_t& seq, const OpContext& ctx) {
  // Private, ordinary, zeroed buffers (their pages are touched here, before any timing): float32 sums of
  // zeros stay zeros, so every repetition does the same work; out of place reads `input`, writes `output`.
  std::vector<float> input(kCopyProbeBytes.back() / sizeof(float), 0.0f), output(input.size(), 0.0f);
  CopyProbeTimes best;
  best.staged_ns.fill(std::numeric_limits<std::uint64_t>::max());
  best.single_ns.fill(std::numeric_limits<std::uint64_t>::max());
  const int rounds = *std::max_element(kCopyProbeRepeats.begin(), kCopyProbeRepeats.end());
  for (int rep = 0; rep < rounds; ++rep) {
    for (int i = 0; i < kCopyProbeSizes; ++i) {
      if (rep >= kCopyProbeRepeats[i]) continue;
      for (const bool in_place : {true, false}) {
        // The two paths alternate which goes first, from one size and one repetition to the next.
        for (int k = 0; k < 2; ++k) {
          const bool single = (k == 0) == ((rep + i) % 2 == 0);
          const auto ns = static_cast<std::uint64_t>(
              time_allreduce(single, input.data(), in_place ? input.data() : output.data(),
                             kCopyProbeBytes[i] / sizeof(float), ++seq, ctx)
                  .count());
          auto& slot = single ? best.single_ns[figure_index(i, in_place)] : best.staged_ns[figure_index(i, in_place)];
          slot = std::min(slot, ns);
        }
      }
    }
  }
  return best;
}

std::chrono::nanoseconds ShmCommunicator::time_allreduce(bool single, const float* input, float* output,
                                                         std::size_t count, std::uint64_t seq, const OpContext& ctx) {
  CollectiveCall call;
  call.kind = CallKind::kAllreduce;
  call.send = input;
  call.recv = output;
  call.count = count;
  call.type = DataType::kFloat32;
  call.op = ReduceOp::kSum;
  call.seq = seq;
  const auto start = Clock::now();
  begin_call(call);
  if (single) allreduce_single(call, ctx, false);
  else staged_allreduce(call, ctx, false);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
}

}  // namespace mirror::coll::detail
