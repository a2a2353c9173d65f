// main.cc — uses the installed mirror::collectives: an allreduce of the ranks' numbers, checked against the
// closed form n(n+1)/2; exit 0 when right.
#include <cstdio>

#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"

int main(int argc, char** argv) {
  mirror::coll::MpiRuntime runtime(&argc, &argv);
  auto comm = mirror::coll::make_communicator();
  long long value = comm->rank() + 1, sum = 0;
  comm->allreduce(&value, &sum, 1, mirror::coll::DataType::kInt64, mirror::coll::ReduceOp::kSum);
  const long long n = comm->size();
  const bool ok = sum == n * (n + 1) / 2;
  if (comm->rank() == 0) std::printf("consumer: sum %lld over %lld rank(s): %s\n", sum, n, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
