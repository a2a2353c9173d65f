// setup_agreement.cc — run_agreed_setup (mirror/train/setup_agreement.h): the stage, then one all-reduce of a
// per-rank failure flag, and the verdict.
#include "mirror/train/setup_agreement.h"

#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "mirror/agreed_error.h"
#include "mirror/error.h"

namespace mirror::train {
namespace {

// Test hook (tests/trainer/agreed_errors.sh): MIRROR_TEST_FAIL_SETUP_RANK=r makes rank r alone fail its first
// setup stage, to check that an error on one rank still ends the job at once.
void maybe_fail_for_test(int rank) {
  static bool done = false;
  const char* which = std::getenv("MIRROR_TEST_FAIL_SETUP_RANK");
  if (done || !which) return;
  done = true;
  MIRROR_CHECK(std::to_string(rank) != which, kInvalidArgument,
               "test failure of rank " << rank << " in setup (MIRROR_TEST_FAIL_SETUP_RANK)");
}

}  // namespace

void run_agreed_setup(coll::Communicator& control, const std::function<void()>& stage) {
  std::exception_ptr failure;
  try {
    maybe_fail_for_test(control.rank());
    stage();
  } catch (...) {
    failure = std::current_exception();
  }
  const int world = control.size();
  std::vector<std::int32_t> failed(static_cast<std::size_t>(world), 0);
  failed[static_cast<std::size_t>(control.rank())] = failure ? 1 : 0;
  control.allreduce(failed.data(), failed.data(), failed.size(), coll::DataType::kInt32, coll::ReduceOp::kMax);
  std::string who;
  int count = 0;
  for (int r = 0; r < world; ++r) {
    if (!failed[static_cast<std::size_t>(r)]) continue;
    who += (count++ ? ", " : "") + std::to_string(r);
  }
  if (count == 0) return;
  if (count < world) {
    if (failure) std::rethrow_exception(failure);
    MIRROR_THROW(kRemote, "setup failed on rank" << (count > 1 ? "s " : " ") << who << " (see its error); stopping");
  }
  try {
    std::rethrow_exception(failure);
  } catch (const AgreedError&) {
    throw;
  } catch (const Error& e) {
    throw AgreedError(e, exit_code::kBadInput);
  } catch (const std::exception& e) {
    throw AgreedError(Error(ErrorKind::kInternal, e.what(), __FILE__, __LINE__), exit_code::kBadInput);
  }
}

}  // namespace mirror::train
