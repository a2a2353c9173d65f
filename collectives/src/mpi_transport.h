// mpi_transport.h — MpiTransport: Transport over MPI point-to-point on a private duplicate of a group
// (MPI_COMM_WORLD, or a part of it) (so user MPI traffic never matches Mirror's). Non-blocking sends/receives polled with
// MPI_Testall against the op's deadline; on timeout the pending requests are cancelled and kTimeout raised
// (PeerTimeoutError, naming the peer). While it waits it also asks an optional interrupt check (are there
// failure notices from other ranks? failure_notices.h) and gives up with kRemote when there are.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>

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
  // Do not free the MPI communicator on destruction (after a failure). Messages abandoned in it (sent to a
  // rank that never received them) stay in MPI's queues; a freed communicator's context id can be reused
  // by the next MPI_Comm_dup, which would then match them. Open MPI only reuses an id free on every rank,
  // so one failed rank keeping it is enough. Costs one communicator per failure.
  void keep_comm_on_destroy() { keep_comm_ = true; }

  void send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) override;
  void recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) override;
  void sendrecv(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer, void* recv_data,
                std::size_t recv_bytes, const OpContext& ctx) override;

 private:
  void exchange(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer, void* recv_data,
                std::size_t recv_bytes, const OpContext& ctx);
  int tag_for(const OpContext& ctx) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  std::function<bool()> interrupt_;
  bool keep_comm_ = false;
};

}  // namespace mirror::coll::detail
