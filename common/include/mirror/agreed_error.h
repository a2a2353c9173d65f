// mirror/agreed_error.h — the exit codes of Mirror's programs, and the error that every rank of a job raises
// at the same point (a bad flag, file or dataset found in setup, or a training run whose loss or gradients
// turned non-finite: the ranks have checked with each other that they all failed). main() prints such an
// error once (rank 0) and ends MPI normally with its exit code, instead of MPI_Abort: a job that failed the
// same way everywhere needs no abort banner. Any other error ends the job with MPI_Abort, exit code 1.
// docs/training.md#exit-codes lists the codes; mirrorrun does not restart a job that exited kNonFinite.
#pragma once

#include <string>

#include "mirror/error.h"

namespace mirror {

namespace exit_code {
constexpr int kOk = 0;
constexpr int kFailure = 1;    // an error on some ranks, or at run time (MPI_Abort)
constexpr int kUsage = 2;      // a bad command line (flag, value or combination)
constexpr int kBadInput = 3;   // configuration, data, checkpoint or device refused by every rank before training
constexpr int kNonFinite = 5;  // training diverged: a loss, gradient or parameter turned NaN or Inf
constexpr int kStopped = 143;  // stopped by SIGTERM/SIGINT after writing a checkpoint
}  // namespace exit_code

class AgreedError : public Error {
 public:
  AgreedError(const Error& cause, int exit_code)
      : Error(cause.kind(), cause.message(), cause.file(), cause.line()), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace mirror
