// failure_notices.h — MpiNotices: the out-of-band failure channel of a communicator (its own MPI_Comm_dup
// of the group, so notices never match collective traffic), and explain_collective_failure(). A rank whose
// collective fails announces once what it was doing (FailureNotice) to every other rank, then listens for a
// short grace period to what the others say; ranks that are alive and waiting in a collective see the
// notice through their transport's interrupt check and answer the same way. What a rank hears (or does not
// hear) is what its error message reports. Used by the mpi backend and the nccl backend.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "call.h"
#include "mirror/error.h"

namespace mirror::coll::detail {

// What a rank says about itself when a collective fails. Fixed size, host byte order (one architecture).
struct FailureNotice {
  enum State : std::int32_t {
    kWaiting = 0,   // alive and waiting in `call` (stopped by another rank's notice)
    kTimedOut = 1,  // `call` timed out waiting for `peer`
    kMismatch = 2,  // `call` received `other` from rank other.from_rank: mismatched collectives
    kFailed = 3,    // `call` failed otherwise; `text` says how
  };
  std::int32_t from_rank = -1;
  std::int32_t state = kWaiting;
  std::int32_t peer = -1;
  std::int32_t timeout_ms = 0;
  CallFingerprint call;   // what this rank was running
  CallFingerprint other;  // kMismatch: the peer's fingerprint
  char text[192] = {};    // kFailed: the error message (truncated)
};

class MpiNotices {
 public:
  explicit MpiNotices(MPI_Comm group);  // duplicates `group` (collective over it)
  ~MpiNotices();
  MpiNotices(const MpiNotices&) = delete;
  MpiNotices& operator=(const MpiNotices&) = delete;

  // A notice from another rank is waiting to be read (MPI_Iprobe; no blocking).
  bool pending();
  // Whether rank `r` has announced a failure (reads what has arrived; no blocking). A rank announces only
  // after its own abandoned transfers have been drained (mpi_requests.h).
  bool heard_from(int r);
  // Sends `notice` to every other rank (non-blocking, at most once per communicator; later calls no-op).
  void announce(const FailureNotice& notice);
  // Reads notices until every other rank has been heard from or `grace` has passed. Returns, per rank,
  // the latest notice heard from it so far (this call and earlier ones); none for ranks not heard from.
  const std::vector<std::optional<FailureNotice>>& collect(std::chrono::milliseconds grace);
  int rank() const { return rank_; }
  // The host name of every rank of the group, by rank (gathered when this is made): failure messages name them.
  const std::vector<std::string>& host_names() const { return host_names_; }
  // Do not free the MPI communicator on destruction (after a failure), as MpiTransport::keep_comm_on_destroy.
  void keep_comm_on_destroy() { keep_comm_ = true; }

 private:
  void drain();
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool announced_ = false;
  bool keep_comm_ = false;
  std::unique_ptr<FailureNotice> outgoing_;  // stays put until the sends complete
  std::vector<MPI_Request> sends_;
  std::vector<std::optional<FailureNotice>> heard_;
  std::vector<std::string> host_names_;
};

// After `call` failed on this rank with `e` (MismatchError, kTimeout — PeerTimeoutError names the peer —,
// kRemote from the interrupt check, or any other error): announces this rank's FailureNotice, listens for
// up to clamp(timeout / 4, 100 ms, 2 s) until every other rank has answered, and returns the error to raise:
//   a mismatch (some rank saw one, or two ranks report different calls at one sequence number):
//     kInvalidArgument "ranks issued mismatched collectives at #n: rank 0 <call>, rank 1 <call>, ..."
//   otherwise the collective, what failed (this rank's own timeout/error, or another rank's), the ranks that
//     did not arrive (no answer: stalled outside any collective or dead; or in another collective, named)
//     and the ranks in it, each with its host ("did not arrive: ranks 2, 3 (host h1; no answer within ...)");
//     kTimeout when any rank timed out, else kRemote / the error's own kind.
Error explain_collective_failure(MpiNotices& notices, const CollectiveCall& call, const Error& e,
                                 std::chrono::milliseconds timeout, int size);

}  // namespace mirror::coll::detail
