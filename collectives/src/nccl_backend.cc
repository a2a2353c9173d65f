// nccl_backend.cc — the nccl backend's table row, in every build: without CUDA its factory says so.
#include "mirror/error.h"
#include "nccl_communicator.h"

namespace mirror::coll::detail {
namespace {

bool nccl_fits(const Topology&, bool, std::string*) { return true; }

std::unique_ptr<Communicator> make_nccl(const CommOptions& options, const Topology&, std::string*) {
#ifdef MIRROR_HAVE_CUDA
  return make_nccl_communicator(options);
#else
  (void)options;
  MIRROR_THROW(kInvalidArgument, "make_communicator: the nccl backend is not in this build (configured "
                                 "without CUDA/NCCL, MIRROR_WITH_CUDA=OFF or no toolkit found); use the host backend");
#endif
}

}  // namespace

const BackendRow& nccl_backend() {
  static const BackendRow row{{"nccl", Buffers::kDevice,
                               "NCCL on CUDA device buffers, bootstrapped over MPI (builds with CUDA only)", {}},
                              nccl_fits, make_nccl};
  return row;
}

}  // namespace mirror::coll::detail
