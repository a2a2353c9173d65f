// mpi_transport.h — MpiTransport: Transport over MPI point-to-point on a private duplicate of a group
// (MPI_COMM_WORLD, or a part of it) (so user MPI traffic never matches Mirror's). Non-blocking sends/receives polled with
// MPI_Testall against the op's deadline; on timeout the pending requests are cancelled and drained
// (mpi_requests.h: a matched transfer goes on after MPI_Cancel) and kTimeout raised
// (PeerTimeoutError, naming the peer and its host). While it waits it also asks an optional interrupt check (are there
// failure notices from other ranks? failure_notices.h) and gives up with kRemote when there are.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "call.h"
#include "transport.h"

namespace mirror::coll::detail {

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm group);  // duplicates `group` (collective over it)
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }
  // Called now and then while a wait is not complete; true stops the wait with kRemote.
  void set_interrupt(std::function<bool()> check) { interrupt_ = std::move(check); }
  // Whether a rank has announced its own failure (and so finished its transfers): sends to it are let go
  // at once after a failure instead of drained (mpi_requests.h). None set: every request is drained.
  void set_peer_done(std::function<bool(int)> done) { peer_done_ = std::move(done); }
  // The host of every rank (by rank), named in timeout errors beside the ranks; none named when unset.
  void set_host_names(std::vector<std::string> names) { host_names_ = std::move(names); }
  // Do not free the MPI communicator on destruction (after a failure). Messages abandoned in it (sent to a
  // rank that never received them) stay in MPI's queues; a freed communicator's context id can be reused
  // by the next MPI_Comm_dup, which would then match them. Open MPI only reuses an id free on every rank,
  // so one failed rank keeping it is enough. Costs one communicator per failure.
  void keep_comm_on_destroy() { keep_comm_ = true; }
  // Requests given up on (timeout, failure, interrupt) that were still active after their drain
  // (mpi_requests.h): their buffers may still be written or read, so owners keep them (keep_until_exit).
  int unfinished() const { return unfinished_; }

  void send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) override;
  void recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) override;
  void sendrecv(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer, void* recv_data,
                std::size_t recv_bytes, const OpContext& ctx) override;

 private:
  void exchange(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer, void* recv_data,
                std::size_t recv_bytes, const OpContext& ctx);
  int tag_for(const OpContext& ctx) const;
  // Cancels and drains `reqs` before an error is raised (no buffer of theirs may be freed while MPI uses it).
  // Requests from `first_send` on are sends to `send_peer`.
  void abandon(std::vector<MPI_Request>& reqs, std::size_t first_send, int send_peer, const OpContext& ctx);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  std::function<bool()> interrupt_;
  std::function<bool(int)> peer_done_;
  bool keep_comm_ = false;
  int unfinished_ = 0;
  std::vector<std::string> host_names_;
};

}  // namespace mirror::coll::detail
