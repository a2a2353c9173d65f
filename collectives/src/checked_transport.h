// checked_transport.h — CheckedTransport: the consistency check of the mpi backend (and of the nccl
// backend's host-side check), as a Transport decorator over the one that moves the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "call.h"
#include "transport.h"

namespace mirror::coll::detail {

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

}  // namespace mirror::coll::detail
