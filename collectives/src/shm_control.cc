// shm_control.cc — ShmControl: phase flags, descriptors, bounded waits, agreement check.
#include "shm_control.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <ctime>

#include <sstream>

#include "host_names.h"
#include "mirror/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MIRROR_CPU_RELAX() _mm_pause()
#else
#define MIRROR_CPU_RELAX() ((void)0)
#endif

namespace mirror::coll::detail {
namespace {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared-memory flags need lock-free 64-bit atomics");
static_assert(std::endian::native == std::endian::little, "the futex word is the low half of the phase counter");

constexpr auto kSpinFor = std::chrono::microseconds(50);      // busy polling before sleeping
constexpr auto kSleepSlice = std::chrono::milliseconds(20);   // longest single futex sleep

std::uint32_t* futex_word(const std::atomic<std::uint64_t>& phase) {
  return reinterpret_cast<std::uint32_t*>(const_cast<std::atomic<std::uint64_t>*>(&phase));
}

std::uint64_t pack(const CollectiveCall& c) {
  return static_cast<std::uint64_t>(c.kind) | static_cast<std::uint64_t>(c.type) << 8 |
         static_cast<std::uint64_t>(c.op) << 16 |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.root + 1)) << 32;
}

bool same_call(const CollectiveCall& a, const CollectiveCall& b) {
  if (a.seq != b.seq || a.kind != b.kind) return false;
  if (a.kind == CallKind::kBarrier) return true;
  if (a.type != b.type || a.count != b.count) return false;
  if (a.reduces() && a.op != b.op) return false;
  if (a.kind == CallKind::kBroadcast && a.root != b.root) return false;
  return true;
}

}  // namespace

std::size_t ShmControl::bytes(int size) {
  const std::size_t raw = static_cast<std::size_t>(size) * (sizeof(PhaseLine) + sizeof(DescLine) + sizeof(BufferLine) +
                                                           sizeof(AddressLine));
  return (raw + 4095) / 4096 * 4096;
}

ShmControl::ShmControl(unsigned char* base, int rank, int size)
    : phases_(reinterpret_cast<PhaseLine*>(base)),
      descs_(reinterpret_cast<DescLine*>(base + static_cast<std::size_t>(size) * sizeof(PhaseLine))),
      buffer_lines_(reinterpret_cast<BufferLine*>(base + static_cast<std::size_t>(size) *
                                                             (sizeof(PhaseLine) + sizeof(DescLine)))),
      address_lines_(reinterpret_cast<AddressLine*>(
          base + static_cast<std::size_t>(size) * (sizeof(PhaseLine) + sizeof(DescLine) + sizeof(BufferLine)))),
      rank_(rank),
      size_(size),
      oversubscribed_(size > static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)))) {}

void ShmControl::publish(const CollectiveCall& call) {
  auto& w = descs_[rank_].word[call.seq & 1];
  w[0].store(call.seq, std::memory_order_relaxed);
  w[1].store(pack(call), std::memory_order_relaxed);
  w[2].store(call.count, std::memory_order_relaxed);
}

void ShmControl::publish_in_both_lines(const CollectiveCall& call) {
  publish(call);
  auto& w = descs_[rank_].word[(call.seq + 1) & 1];
  w[0].store(call.seq, std::memory_order_relaxed);
  w[1].store(pack(call), std::memory_order_relaxed);
  w[2].store(call.count, std::memory_order_relaxed);
}

void ShmControl::publish_buffers(std::uint64_t seq, const BufferPlaces& places) {
  auto& w = buffer_lines_[rank_].word[seq & 1];
  w[0].store(places.send, std::memory_order_relaxed);
  w[1].store(places.recv, std::memory_order_relaxed);
  w[2].store(places.live, std::memory_order_relaxed);
  w[3].store(places.bytes, std::memory_order_relaxed);
}

ShmControl::BufferPlaces ShmControl::buffers(int q, std::uint64_t seq) const {
  const auto& w = buffer_lines_[q].word[seq & 1];
  BufferPlaces p;
  p.send = w[0].load(std::memory_order_relaxed);
  p.recv = w[1].load(std::memory_order_relaxed);
  p.live = w[2].load(std::memory_order_relaxed);
  p.bytes = w[3].load(std::memory_order_relaxed);
  return p;
}

void ShmControl::publish_addresses(std::uint64_t seq, const Addresses& a) {
  auto& w = address_lines_[rank_].word[seq & 1];
  w[0].store(a.send, std::memory_order_relaxed);
  w[1].store(a.recv, std::memory_order_relaxed);
  w[2].store(a.bytes, std::memory_order_relaxed);
}

ShmControl::Addresses ShmControl::addresses(int q, std::uint64_t seq) const {
  const auto& w = address_lines_[q].word[seq & 1];
  return {w[0].load(std::memory_order_relaxed), w[1].load(std::memory_order_relaxed),
          w[2].load(std::memory_order_relaxed)};
}

void ShmControl::signal(std::uint64_t phase) {
  PhaseLine& line = phases_[rank_];
  line.phase.store(phase, std::memory_order_seq_cst);
  if (line.waiters.load(std::memory_order_seq_cst) > 0) {
    ::syscall(SYS_futex, futex_word(line.phase), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
}

void ShmControl::sleep_on(int q, std::uint64_t phase, const OpContext& ctx) const {
  PhaseLine& line = phases_[q];
  line.waiters.fetch_add(1, std::memory_order_seq_cst);
  const std::uint64_t seen = line.phase.load(std::memory_order_seq_cst);
  if (seen < phase) {
    const auto left = ctx.deadline - Clock::now();
    const auto slice = std::min<Clock::duration>(left, kSleepSlice);
    if (slice > Clock::duration::zero()) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count();
      timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      // Returns at once if the word already changed (EAGAIN), on a wake, or after the slice.
      ::syscall(SYS_futex, futex_word(line.phase), FUTEX_WAIT, static_cast<std::uint32_t>(seen), &ts, nullptr, 0);
    }
  }
  line.waiters.fetch_sub(1, std::memory_order_seq_cst);
}

void ShmControl::wait_all(std::uint64_t phase, const OpContext& ctx) const {
  int next = 0;  // ranks before `next` have arrived
  auto arrived = [&] {
    while (next < size_ && phases_[next].phase.load(std::memory_order_acquire) >= phase) ++next;
    return next == size_;
  };
  for (int i = 0; i < 256; ++i) {  // the common case on an idle machine: the others are moments away
    if (arrived()) return;
    MIRROR_CPU_RELAX();
  }
  // More ranks than CPUs: the rank awaited may be waiting for this one's CPU, so poll by yielding it
  // (spinning would hold the CPU that rank needs; docs/collectives-shm.md, "Synchronisation").
  const auto spin_until = Clock::now() + kSpinFor;
  for (int i = 0;; ++i) {
    if (arrived()) return;
    if (oversubscribed_) ::sched_yield();
    else MIRROR_CPU_RELAX();
    if ((i & 63) == 0 && Clock::now() >= spin_until) break;
  }
  for (;;) {
    if (arrived()) return;
    if (Clock::now() >= ctx.deadline) throw_timeout(phase, ctx);
    sleep_on(next, phase, ctx);
  }
}

CollectiveCall ShmControl::read_desc(int rank, std::uint64_t parity) const {
  const auto& w = descs_[rank].word[parity & 1];
  CollectiveCall c;
  c.seq = w[0].load(std::memory_order_relaxed);
  const std::uint64_t p = w[1].load(std::memory_order_relaxed);
  c.kind = static_cast<CallKind>(p & 0xff);
  c.type = static_cast<DataType>((p >> 8) & 0xff);
  c.op = static_cast<ReduceOp>((p >> 16) & 0xff);
  c.root = static_cast<int>(static_cast<std::uint32_t>(p >> 32)) - 1;
  c.count = w[2].load(std::memory_order_relaxed);
  return c;
}

CollectiveCall ShmControl::latest_desc(int rank) const {
  const CollectiveCall a = read_desc(rank, 0), b = read_desc(rank, 1);
  return a.seq >= b.seq ? a : b;
}

void ShmControl::check_agreement(const CollectiveCall& call) const {
  bool agree = true;
  for (int r = 0; r < size_ && agree; ++r) agree = same_call(call, read_desc(r, call.seq));
  if (agree) return;
  std::ostringstream s;
  s << "ranks issued mismatched collectives: ";
  for (int r = 0; r < size_; ++r) s << (r ? ", " : "") << "rank " << r << " " << read_desc(r, call.seq).describe(size_);
  s << " (seen on rank " << rank_ << "; every rank must issue the same collectives in the same order with the same "
    << "count, type, reduction and root)";
  throw Error(ErrorKind::kInvalidArgument, s.str(), __FILE__, __LINE__);
}

void ShmControl::throw_timeout(std::uint64_t phase, const OpContext& ctx) const {
  std::ostringstream s;
  s << (ctx.describe ? ctx.describe() : std::string("collective")) << " timed out after " << ctx.timeout.count()
    << " ms on rank " << rank_ << " (host " << this_host_name() << ", shared-memory transport, step " << phase << "): ";
  int missing = 0;
  std::ostringstream who;
  for (int r = 0; r < size_; ++r) {
    if (phases_[r].phase.load(std::memory_order_acquire) >= phase) continue;
    const bool never = phases_[r].phase.load(std::memory_order_relaxed) == 0;
    who << (missing++ ? ", " : "") << "rank " << r << " (last issued: "
        << (never ? std::string("nothing") : latest_desc(r).describe(size_)) << ")";
  }
  s << "did not arrive: " << who.str()
    << "; a rank skipped this collective, is stuck, or died";
  throw Error(ErrorKind::kTimeout, s.str(), __FILE__, __LINE__);
}

}  // namespace mirror::coll::detail
