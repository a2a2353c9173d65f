// mirror/train/setup_agreement.h — ending a job cleanly when every rank finds the same problem before
// training (a bad data file, a model that does not fit the data, a checkpoint of another model, a device that
// is not there). A setup stage runs on every rank, then the ranks tell each other whether it failed, in one
// collective that every rank reaches whatever happened to it:
//   - none failed: go on;
//   - all failed: every rank throws AgreedError(its error, exit_code::kBadInput): main prints rank 0's once and
//     ends MPI normally (no abort banner), exit code 3;
//   - some failed: those rethrow their own error, the others throw kRemote naming them; main aborts the job
//     (MPI_Abort), as for any error on some ranks only.
// A stage must not end in the middle of a collective on one rank while another rank fails before it: put the
// agreement after the stage's collectives, or run stages without collectives. If the agreement's collective
// itself fails (a rank died, or one is stuck in another collective: the communicator's timeout and
// consistency check say so), that error propagates and the job is aborted.
#pragma once

#include <functional>

#include "mirror/coll/communicator.h"

namespace mirror::train {

void run_agreed_setup(coll::Communicator& control, const std::function<void()>& stage);

}  // namespace mirror::train
