// checked_transport.cc — CheckedTransport: fingerprints ahead of each collective's first message on
// each channel, compared before any received data is used.
#include "checked_transport.h"

#include <cstring>
#include <sstream>

namespace mirror::coll::detail {

CheckedTransport::CheckedTransport(Transport& inner)
    : inner_(inner),
      sent_epoch_(static_cast<std::size_t>(inner.size()), 0),
      recv_epoch_(static_cast<std::size_t>(inner.size()), 0),
      send_stage_(kFingerprintBytes + kPiggybackBytes),
      recv_stage_(kFingerprintBytes + kPiggybackBytes) {}

void CheckedTransport::begin(const CallFingerprint& mine) {
  mine_ = mine;
  ++epoch_;  // every peer's mark (an older epoch) now reads "not yet exchanged"
}

void CheckedTransport::check(const unsigned char* received, int peer) const {
  CallFingerprint theirs;
  std::memcpy(&theirs, received, sizeof(theirs));
  theirs.from_rank = peer;
  if (theirs.magic != CallFingerprint::kMagic) {
    std::ostringstream m;
    m << "ranks issued mismatched collectives at #" << mine_.seq << ": rank " << mine_.from_rank << " "
      << mine_.describe() << ", rank " << peer << " sent a message without a call fingerprint (the consistency "
      << "check is off there: CommOptions.check_consistency (--check-collectives) must agree on all ranks)";
    theirs = CallFingerprint();
    theirs.from_rank = peer;
    throw MismatchError(mine_, theirs, m.str(), __FILE__, __LINE__);
  }
  if (!mine_.same_call(theirs)) {
    throw MismatchError(mine_, theirs, mismatch_message(mine_.seq, {mine_, theirs}), __FILE__, __LINE__);
  }
}

namespace {
// One exchange through the inner transport; a negative peer means "no such side".
void exchange(Transport& t, int sp, const void* sd, std::size_t sb, int rp, void* rd, std::size_t rb,
              const OpContext& ctx) {
  if (sp >= 0 && rp >= 0) {
    t.sendrecv(sp, sd, sb, rp, rd, rb, ctx);
  } else if (sp >= 0) {
    t.send(sp, sd, sb, ctx);
  } else if (rp >= 0) {
    t.recv(rp, rd, rb, ctx);
  }
}
}  // namespace

void CheckedTransport::send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) {
  sendrecv(peer, data, bytes, -1, nullptr, 0, ctx);
}

void CheckedTransport::recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) {
  sendrecv(-1, nullptr, 0, peer, data, bytes, ctx);
}

void CheckedTransport::sendrecv(int sp, const void* sd, std::size_t sb, int rp, void* rd, std::size_t rb,
                                const OpContext& ctx) {
  const bool first_send = sp >= 0 && sent_epoch_[static_cast<std::size_t>(sp)] != epoch_;
  const bool first_recv = rp >= 0 && recv_epoch_[static_cast<std::size_t>(rp)] != epoch_;
  if (!first_send && !first_recv) return exchange(inner_, sp, sd, sb, rp, rd, rb, ctx);
  constexpr std::size_t kF = kFingerprintBytes;
  // Exchange 1: fingerprints (with small payloads) on first channels, plain data on the others.
  const void* s1 = sd;
  std::size_t s1b = sb;
  bool send_later = false;
  if (first_send) {
    sent_epoch_[static_cast<std::size_t>(sp)] = epoch_;
    if (sb <= kPiggybackBytes) {
      std::memcpy(send_stage_.data(), &mine_, kF);
      if (sb > 0) std::memcpy(send_stage_.data() + kF, sd, sb);
      s1 = send_stage_.data();
      s1b = kF + sb;
    } else {
      s1 = &mine_;
      s1b = kF;
      send_later = true;
    }
  }
  void* r1 = rd;
  std::size_t r1b = rb;
  bool recv_later = false;
  if (first_recv) {
    recv_epoch_[static_cast<std::size_t>(rp)] = epoch_;
    r1 = recv_stage_.data();
    r1b = recv_stage_.size();  // room for either form the peer may have sent
    recv_later = rb > kPiggybackBytes;
  }
  exchange(inner_, sp, s1, s1b, rp, r1, r1b, ctx);
  if (first_recv) {
    check(recv_stage_.data(), rp);
    if (!recv_later && rb > 0) std::memcpy(rd, recv_stage_.data() + kF, rb);
  }
  // Exchange 2: payloads that followed their fingerprint as messages of their own.
  exchange(inner_, send_later ? sp : -1, sd, sb, recv_later ? rp : -1, rd, rb, ctx);
}

}  // namespace mirror::coll::detail
