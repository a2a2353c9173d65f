// collective_checks.cc — exact-sum inputs, serial references, the per-op checks of collective_checks.h, and
// the /dev/shm listing the shared-memory tests check for leftovers.
#include "collective_checks.h"

#include <dirent.h>

#include <cstring>
#include <sstream>

#include "mirror/coll/half.h"
#include "mirror/error.h"

namespace mirror::coll::testing {

double test_input(ReduceOp op, int rank, std::size_t i, int n) {
  const auto k = static_cast<long long>((i * 5 + static_cast<std::size_t>(rank) * 3) % 7) - 3;  // -3..3
  switch (op) {
    case ReduceOp::kProd: {
      const auto m = (i + 2 * static_cast<std::size_t>(rank)) % 3;
      return m == 0 ? 2.0 : (m == 1 ? -1.0 : 1.0);
    }
    case ReduceOp::kAvg: return static_cast<double>(k * n);
    default: return static_cast<double>(k);
  }
}

double test_reference(ReduceOp op, std::size_t i, int n) {
  double acc = test_input(op, 0, i, n);
  for (int r = 1; r < n; ++r) {
    const double v = test_input(op, r, i, n);
    if (op == ReduceOp::kSum || op == ReduceOp::kAvg) acc += v;
    if (op == ReduceOp::kMin && v < acc) acc = v;
    if (op == ReduceOp::kMax && v > acc) acc = v;
    if (op == ReduceOp::kProd) acc *= v;
  }
  return op == ReduceOp::kAvg ? acc / n : acc;
}

void put(void* buf, std::size_t i, DataType type, double v) {
  switch (type) {
    case DataType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(buf)[i] = v; break;
    case DataType::kFloat16: static_cast<std::uint16_t*>(buf)[i] = float_to_half(static_cast<float>(v)); break;
    case DataType::kBFloat16: static_cast<std::uint16_t*>(buf)[i] = float_to_bfloat16(static_cast<float>(v)); break;
    case DataType::kInt32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v); break;
    case DataType::kInt64: static_cast<std::int64_t*>(buf)[i] = static_cast<std::int64_t>(v); break;
  }
}

double get(const void* buf, std::size_t i, DataType type) {
  switch (type) {
    case DataType::kFloat32: return static_cast<const float*>(buf)[i];
    case DataType::kFloat64: return static_cast<const double*>(buf)[i];
    case DataType::kFloat16: return half_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DataType::kBFloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DataType::kInt32: return static_cast<const std::int32_t*>(buf)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
  }
  return 0;
}

TestBuffer::TestBuffer(bool device, std::size_t bytes) : host(bytes) {
  if (device) dev_ = std::make_unique<DeviceBuffer>(bytes);
}
void* TestBuffer::ptr() { return dev_ ? dev_->data() : host.data(); }
void TestBuffer::upload() {
  if (dev_) dev_->upload(host.data(), host.size());
}
void TestBuffer::download() {
  if (dev_) dev_->download(host.data(), host.size());
}

namespace {

std::string name(const char* what, DataType t, std::size_t count, bool in_place, int rank, int n) {
  std::ostringstream s;
  s << what << " " << to_string(t) << " count " << count << (in_place ? " in-place" : " out-of-place") << " rank "
    << rank << "/" << n;
  return s.str();
}

// Compares `count` elements of buf from `at` with expected(i); reports the first mismatch.
template <typename Expected>
::testing::AssertionResult compare(const std::string& what, const void* buf, std::size_t at, std::size_t count,
                                   DataType t, Expected expected) {
  for (std::size_t i = 0; i < count; ++i) {
    const double got = get(buf, at + i, t), want = expected(i);
    if (got != want) {
      return ::testing::AssertionFailure() << what << ": element " << i << " is " << got << ", expected " << want;
    }
  }
  return ::testing::AssertionSuccess();
}

constexpr double kSentinel = 101.0;  // no correct result has this value

}  // namespace

::testing::AssertionResult check_allreduce(Communicator& c, bool device, DataType t, ReduceOp op, std::size_t count,
                                           bool in_place) {
  const int r = c.rank(), n = c.size();
  const std::size_t es = dtype_size(t);
  TestBuffer send(device, count * es), recv(device, count * es);
  TestBuffer& in = in_place ? recv : send;
  for (std::size_t i = 0; i < count; ++i) {
    put(in.host.data(), i, t, test_input(op, r, i, n));
    if (!in_place) put(recv.host.data(), i, t, kSentinel);
  }
  send.upload();
  recv.upload();
  c.allreduce(in.ptr(), recv.ptr(), count, t, op);
  recv.download();
  const std::string what = name("allreduce", t, count, in_place, r, n) + " " + to_string(op);
  auto res = compare(what, recv.host.data(), 0, count, t, [&](std::size_t i) { return test_reference(op, i, n); });
  if (!res || in_place) return res;
  send.download();  // out of place: the input is untouched
  return compare(what + " (send buffer)", send.host.data(), 0, count, t, [&](std::size_t i) { return test_input(op, r, i, n); });
}

::testing::AssertionResult check_broadcast(Communicator& c, bool device, DataType t, std::size_t count, int root) {
  const int r = c.rank(), n = c.size();
  TestBuffer buf(device, count * dtype_size(t));
  for (std::size_t i = 0; i < count; ++i) put(buf.host.data(), i, t, r == root ? test_input(ReduceOp::kSum, root, i, n) : kSentinel);
  buf.upload();
  c.broadcast(buf.ptr(), count, t, root);
  buf.download();
  return compare(name("broadcast", t, count, true, r, n) + " root " + std::to_string(root), buf.host.data(), 0, count,
                 t, [&](std::size_t i) { return test_input(ReduceOp::kSum, root, i, n); });
}

::testing::AssertionResult check_allgather(Communicator& c, bool device, DataType t, std::size_t count, bool in_place) {
  const int r = c.rank(), n = c.size();
  const std::size_t es = dtype_size(t), total = count * static_cast<std::size_t>(n);
  TestBuffer send(device, count * es), recv(device, total * es);
  for (std::size_t j = 0; j < total; ++j) put(recv.host.data(), j, t, kSentinel);
  const std::size_t mine = static_cast<std::size_t>(r) * count;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = test_input(ReduceOp::kSum, r, i, n);
    if (in_place) put(recv.host.data(), mine + i, t, v); else put(send.host.data(), i, t, v);
  }
  send.upload();
  recv.upload();
  const void* src = in_place ? static_cast<unsigned char*>(recv.ptr()) + mine * es : send.ptr();
  c.allgather(src, recv.ptr(), count, t);
  recv.download();
  return compare(name("allgather", t, count, in_place, r, n), recv.host.data(), 0, total, t, [&](std::size_t j) {
    return test_input(ReduceOp::kSum, static_cast<int>(j / count), j % count, n);
  });
}

::testing::AssertionResult check_reduce_scatter(Communicator& c, bool device, DataType t, ReduceOp op,
                                                std::size_t count, bool in_place) {
  const int r = c.rank(), n = c.size();
  const std::size_t es = dtype_size(t), total = count * static_cast<std::size_t>(n);
  const std::size_t mine = static_cast<std::size_t>(r) * count;
  TestBuffer send(device, total * es), recv(device, count * es);
  for (std::size_t j = 0; j < total; ++j) put(send.host.data(), j, t, test_input(op, r, j, n));
  for (std::size_t i = 0; i < count; ++i) put(recv.host.data(), i, t, kSentinel);
  send.upload();
  recv.upload();
  auto* sp = static_cast<unsigned char*>(send.ptr());
  c.reduce_scatter(sp, in_place ? sp + mine * es : recv.ptr(), count, t, op);
  const std::string what = name("reduce_scatter", t, count, in_place, r, n) + " " + to_string(op);
  auto ref = [&](std::size_t i) { return test_reference(op, mine + i, n); };
  if (in_place) {
    send.download();
    auto res = compare(what, send.host.data(), mine, count, t, ref);
    if (!res || device) return res;  // NCCL does not promise to leave the other blocks alone
    // Host backend: outside this rank's block the buffer is untouched.
    return compare(what + " (other blocks)", send.host.data(), 0, mine, t, [&](std::size_t j) { return test_input(op, r, j, n); });
  }
  recv.download();
  return compare(what, recv.host.data(), 0, count, t, ref);
}

namespace {
// Whether a mismatch message names `fragment`. Across hosts rank 0 may still be leaving barrier #0 when the
// notices of the mismatch at #1 reach it (docs/multi-node.md, "cluster.consistency"); it then fails there, and
// every message truthfully names its call as "barrier #0". A fragment "rank 0 <call>" is then met by another
// agreeing rank named with <call> (none exists at 2 ranks: there the fragment must be there as it is).
bool names_call(const std::string& what, const std::string& fragment, int size, int odd_rank) {
  if (what.find(fragment) != std::string::npos) return true;
  const std::string rank0 = "rank 0 ";
  if (fragment.rfind(rank0, 0) != 0 || what.find("rank 0 barrier #0") == std::string::npos) return false;
  for (int r = 1; r < size; ++r) {
    if (r != odd_rank && what.find("rank " + std::to_string(r) + " " + fragment.substr(rank0.size())) != std::string::npos)
      return true;
  }
  return false;
}
}  // namespace

void expect_mismatch_everywhere(Communicator& c, int odd_rank, const std::function<void(Communicator&, bool odd)>& call,
                                const std::vector<std::string>& fragments) {
  try {
    c.barrier();  // #0
    call(c, c.rank() == odd_rank);
    c.barrier();
    ADD_FAILURE() << "rank " << c.rank() << ": mismatched collectives were not detected";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << what;
    EXPECT_NE(what.find("ranks issued mismatched collectives at #1:"), std::string::npos) << what;
    for (const auto& f : fragments)
      EXPECT_TRUE(names_call(what, f, c.size(), odd_rank)) << "missing '" << f << "' in: " << what;
  }
}

std::vector<std::string> shm_entries_of(long pid) {
  std::vector<std::string> found;
  const std::string prefix = "mirror-shm-" + std::to_string(pid) + "-";
  if (DIR* d = ::opendir("/dev/shm")) {
    while (const dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) found.push_back(e->d_name);
    }
    ::closedir(d);
  }
  return found;
}

}  // namespace mirror::coll::testing
