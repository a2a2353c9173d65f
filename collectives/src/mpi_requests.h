// mpi_requests.h — abandon_requests(): ends MPI requests that will never be waited for (after a timeout or
// a failure) so that, as far as MPI allows, nothing touches their buffers any more once the call that owns
// them has thrown; keep_until_exit() for the buffers of those it could not end. Private to collectives/.
//
// Why a cancel is not enough: Open MPI cancels a receive only while it is unmatched. A matched one (the
// rendezvous of a large message under way, a fragment half read) goes on after MPI_Cancel, and so does any
// send (ob1 does not cancel sends): the TCP transport keeps reading the socket into the receive buffer, or
// writing the send buffer out, whenever any later MPI call makes progress. MPI_Request_free does not stop
// that. If the caller then frees the buffer (a vector in a test that caught the error, an munmap'ed large
// block), the next readv into it fails with "Bad address" and the job dies — seen across hosts after a
// detected mismatch, where the other ranks are alive and still sending. So each request is cancelled and
// then waited for, together, up to a drain time: with live peers every matched transfer completes within
// it; with a dead or cut-off peer nothing will move anyway, and what is left unfinished is counted. A send
// to a rank that has already announced its own failure (failure_notices.h: a rank drains before it
// announces) can never be matched any more, so it is let go at once instead of waited out.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mirror::coll::detail {

// How long abandon_requests() waits after a failure of a collective with this timeout: the failure
// notices' grace period, clamp(timeout / 4, 100 ms, 2 s) (64 MiB crosses a 1 Gbit/s link in 0.54 s).
inline std::chrono::milliseconds abandon_drain(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 4, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
}

// Cancels every active request in `requests`, waits up to `drain` for all of them to complete (cancelled,
// or their transfer finished), and frees those still active after that (MPI releases them when they end;
// their buffers may still be used until then). `let_go(i)`, when given, says that request i will never
// touch its buffer again (it is freed then, not counted). Returns how many were left active; all entries
// end as MPI_REQUEST_NULL.
inline int abandon_requests(std::vector<MPI_Request>& requests, std::chrono::milliseconds drain,
                            const std::function<bool(std::size_t)>& let_go = {}) noexcept {
  for (auto& r : requests) {
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
  }
  const auto until = std::chrono::steady_clock::now() + drain;
  for (;;) {
    int active = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      MPI_Request& r = requests[i];
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {  // errored: MPI has let go of it
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
        continue;
      }
      if (!done && let_go && let_go(i)) {
        MPI_Request_free(&r);
        continue;
      }
      active += done ? 0 : 1;
    }
    if (active == 0) return 0;
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  int left = 0;
  for (auto& r : requests) {
    if (r == MPI_REQUEST_NULL) continue;
    ++left;
    MPI_Request_free(&r);
  }
  return left;
}

// Keeps `what` (memory an unfinished abandoned request may still read or write) alive until the process
// ends, when static destruction releases it (after MPI_Finalize, or never when the job aborts).
template <class T>
void keep_until_exit(T&& what) {
  static std::mutex m;
  static std::vector<std::shared_ptr<void>> kept;
  auto p = std::make_shared<std::decay_t<T>>(std::forward<T>(what));
  std::lock_guard<std::mutex> lock(m);
  kept.push_back(std::move(p));
}

}  // namespace mirror::coll::detail
