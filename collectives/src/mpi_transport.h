// mpi_transport.h — MpiTransport: Transport over MPI point-to-point on a private duplicate of
// MPI_COMM_WORLD (so user MPI traffic never matches Mirror's). Non-blocking sends/receives polled with
// MPI_Testall against the op's deadline; on timeout the pending requests are cancelled and kTimeout raised.
#pragma once

#include <mpi.h>

#include "transport.h"

namespace mirror::coll::detail {

class MpiTransport final : public Transport {
 public:
  MpiTransport();  // duplicates MPI_COMM_WORLD (collective over the world)
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }

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
};

}  // namespace mirror::coll::detail
