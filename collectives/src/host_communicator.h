// host_communicator.h — HostCommunicator: the host (CPU buffer) backend. Validates each call, numbers it,
// and runs it through OpQueue with the algorithms of host_algorithms.h over an MpiTransport.
// 16-bit floats are widened to float32, reduced, and rounded once (reduce.h). After a collective fails
// (timeout, mismatch, MPI error) the communicator is unusable: every later call throws, naming the first
// failure.
//
// Failures are explained, not just reported: CheckedTransport (the consistency check) sends this rank's
// CallFingerprint ahead of the first message of each collective on each channel and compares the one it
// receives; when a collective fails, the rank announces what it was doing over MpiNotices, listens a short
// grace period (timeout / 4, between 100 ms and 2 s) to what the other ranks answer, and throws an error that
// names the collective, the ranks that did not arrive (no answer: stalled outside any collective, or dead;
// or busy in another collective, named), and for a mismatch every rank's call.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "call.h"
#include "host_algorithms.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "op_queue.h"
#include "queued_communicator.h"
#include "transport.h"

namespace mirror::coll::detail {

class MpiNotices;

// Transport decorator of the consistency check. The first message of a collective from this rank to each
// peer carries this rank's fingerprint, and the first message from each peer is checked against ours:
//   payload <= kPiggybackBytes: one message, fingerprint + payload (staged through a copy);
//   larger: the fingerprint alone, then the payload as its own message (one extra small message).
// A first receive always posts a kFingerprint + kPiggybackBytes buffer, so whatever the peer sent first
// (either form, any count) fits and its fingerprint is read before any data is used. A mismatch throws
// MismatchError. Requires of the inner transport that a receive may complete with a shorter message.
class CheckedTransport final : public Transport {
 public:
  static constexpr std::size_t kFingerprintBytes = sizeof(CallFingerprint);
  static constexpr std::size_t kPiggybackBytes = 16 * 1024;

  explicit CheckedTransport(Transport& inner);
  // Starts a collective: `mine` is this rank's fingerprint of it; clears the per-peer "first" marks.
  void begin(const CallFingerprint& mine);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) override;
  void recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) override;
  void sendrecv(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer, void* recv_data,
                std::size_t recv_bytes, const OpContext& ctx) override;

 private:
  void check(const unsigned char* received, int peer) const;
  Transport& inner_;
  CallFingerprint mine_;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> sent_epoch_, recv_epoch_;  // == epoch_: already exchanged in this collective
  std::vector<unsigned char> send_stage_, recv_stage_;
};

class HostCommunicator final : public QueuedCommunicator {
 public:
  // Takes the transport; the progress thread is used when use_progress_thread (MPI_THREAD_MULTIPLE).
  HostCommunicator(std::unique_ptr<Transport> transport, const CommOptions& options, bool use_progress_thread);
  ~HostCommunicator() override;

 private:
  void run(const CollectiveCall& call, const OpContext& ctx) override;
  Error explain(const CollectiveCall& call, const Error& e) override;
  void do_allreduce(const CollectiveCall& call, const OpContext& ctx);
  void do_allgather(const CollectiveCall& call, const OpContext& ctx);
  void do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx);

  std::unique_ptr<Transport> transport_;  // the inner transport (MPI, or another)
  std::unique_ptr<CheckedTransport> checked_;  // null when the check is off
  Transport* algo_transport_ = nullptr;  // what the algorithms use: checked_ or transport_
  std::unique_ptr<MpiNotices> notices_;
  CommOptions options_;
  Workspace workspace_;  // used by the executing thread only (one op at a time)
};

}  // namespace mirror::coll::detail
