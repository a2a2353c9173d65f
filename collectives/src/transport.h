// transport.h — Transport: how the host algorithms move bytes between ranks, kept apart from the
// algorithms themselves (host_algorithms.h) so another transport (shared memory) can replace MPI.
// Every call blocks until its bytes have moved or the deadline in the OpContext passes; then it throws
// mirror::Error(kTimeout) naming the collective, its sequence number and size, and the peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace mirror::coll::detail {

using Clock = std::chrono::steady_clock;

// What a transport needs to know about the collective it serves: the tag that keeps the messages of one
// collective apart from those of the next, and the deadline with a description for the timeout error.
struct OpContext {
  std::uint64_t seq = 0;
  Clock::time_point deadline = Clock::time_point::max();
  std::chrono::milliseconds timeout{0};
  // Made only when an error needs it, e.g. "allreduce #12 (1000 x float32 sum, 4000 bytes)".
  std::function<std::string()> describe;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual void send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) = 0;
  virtual void recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) = 0;
  // Sends to send_peer and receives from recv_peer at the same time (no deadlock in a ring).
  virtual void sendrecv(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer,
                        void* recv_data, std::size_t recv_bytes, const OpContext& ctx) = 0;
};

}  // namespace mirror::coll::detail
