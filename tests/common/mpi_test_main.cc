// mpi_test_main.cc — main() for GoogleTest suites that run under mpirun.
// Initialises MPI, lets rank 0 print the usual GoogleTest output, makes every other rank print only its
// failures (prefixed "[rank r]"), and returns an exit code agreed by all ranks (any failure fails all).
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>

#include "mirror/coll/runtime.h"

namespace {

// Prints only failed assertions, tagged with the rank; used on ranks other than 0.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  mirror::coll::MpiRuntime runtime(&argc, &argv);
  const int rank = mirror::coll::MpiRuntime::world_rank();
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int code = 0;
  try {
    code = RUN_ALL_TESTS();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error: %s\n", rank, e.what());
    code = 1;
  }
  return mirror::coll::agree_exit_code(code);
}
