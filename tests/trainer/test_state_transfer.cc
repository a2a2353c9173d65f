// test_state_transfer.cc — the layers' non-gradient buffers through the trainer's state plumbing, under
// mpirun: a checkpoint captured on rank 0 holds them (round trip bit-exact through the file); a resume
// restores them on every rank exactly, beside the parameters and the optimizer state; average_buffers
// (--no-sync-bn) gives every rank the mean (exact-sum inputs); the replica reducer sums over the ranks and
// gathers in rank order.
// A test layer (tests/nn/counting_layer.h) stands in for BatchNorm.
#include <gtest/gtest.h>

#include <filesystem>

#include "../nn/counting_layer.h"
#include "mirror/coll/communicator.h"
#include "mirror/nn/linear.h"
#include "replica_reducer.h"
#include "state_transfer.h"

using namespace mirror;

namespace {

std::unique_ptr<nn::Model> counting_model() {
  std::vector<nn::NamedLayer> layers;
  layers.push_back({"count1", std::make_unique<nn::testing::CountingLayer>()});
  layers.push_back({"fc1", std::make_unique<nn::Linear>(6, 3, nn::Device{})});
  return std::make_unique<nn::Model>(std::move(layers), nn::Shape{6}, 3, nn::Device{}, "counting");
}

// Runs `forwards` forward passes with this rank's sample ids, so every rank's buffers differ.
void run_forwards(nn::Model& model, int rank, int forwards) {
  nn::Tensor x({2, 6}, nn::Device{});
  x.copy_from_host(std::vector<float>(12, 0.5f));
  const std::vector<std::int64_t> ids = {rank * 10 + 1, rank * 10 + 2};
  nn::ForwardContext context;
  context.sample_ids = ids;
  for (int i = 0; i < forwards; ++i) {
    context.step = i + rank;
    model.forward(x, context);
  }
}

std::string shared_dir(coll::Communicator& comm) {
  std::int64_t id = comm.rank() == 0 ? static_cast<std::int64_t>(::getpid()) : 0;
  comm.broadcast(&id, 1, coll::DataType::kInt64, 0);
  return (std::filesystem::temp_directory_path() / ("mirror_test_state_" + std::to_string(id))).string();
}

}  // namespace

TEST(StateTransfer, CheckpointAndResumeRestoreBuffersExactly) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank();
  auto model = counting_model();
  train::init_and_broadcast_parameters(*model, 7, *comm);
  run_forwards(*model, rank, 3 + rank);
  auto optimizer = nn::Optimizer::create({}, model->num_parameters(), nn::Device{});
  optimizer->state_from_host("momentum", std::vector<float>(static_cast<std::size_t>(model->num_parameters()), 0.25f));

  train::TrainConfig config;
  config.model = "counting";
  const std::string dir = shared_dir(*comm);
  std::string path;
  if (rank == 0) {
    train::RunPosition pos;
    pos.step = 11;
    pos.epoch = 1;
    const train::CheckpointState s = train::capture_state(*model, *optimizer, pos, config, comm->size());
    path = train::write_checkpoint(dir, s);
    const train::CheckpointState r = train::read_checkpoint(path);
    ASSERT_EQ(r.buffers.size(), 2u);
    EXPECT_EQ(r.buffers[0].name, "count1.forwards");
    EXPECT_EQ(r.buffers[0].values, (std::vector<float>{3}));
    EXPECT_EQ(r.buffers[1].name, "count1.ids");
    EXPECT_EQ(r.buffers[1].values, (std::vector<float>{-1 + 3 * 3, 2}));  // ids 1 + 2 three times, last step 2
    EXPECT_EQ(r.sample_shape, (std::vector<std::int64_t>{6}));
    EXPECT_EQ(r.model_description, "counting");
  }
  const std::vector<float> rank0_buffers = [&] {
    std::vector<float> b = model->buffers_to_host();
    comm->broadcast(b.data(), b.size(), coll::DataType::kFloat32, 0);
    return b;
  }();
  const std::vector<float> params = model->params_to_host();

  auto fresh = counting_model();  // other parameters, initial buffers
  fresh->init_parameters(99);
  auto fresh_optimizer = nn::Optimizer::create({}, fresh->num_parameters(), nn::Device{});
  config.checkpoint_dir = dir;
  config.resume.kind = train::ResumeFrom::Kind::kLatest;
  train::RunPosition pos;
  std::string used;
  ASSERT_TRUE(train::resume_from_checkpoint(config, *fresh, *fresh_optimizer, pos, *comm, used, nullptr));
  EXPECT_EQ(fresh->buffers_to_host(), rank0_buffers) << "rank " << rank;
  EXPECT_EQ(fresh->params_to_host(), params) << "rank " << rank;
  EXPECT_EQ(fresh_optimizer->state_to_host("momentum"), optimizer->state_to_host("momentum"));
  EXPECT_EQ(pos.step, 11);
  comm->barrier();
  if (rank == 0) std::filesystem::remove_all(dir);
}

TEST(StateTransfer, AverageBuffersGivesEveryRankTheMean) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  auto model = counting_model();
  // count1.forwards = rank; count1.ids = {2 * rank, -rank}: the mean over N ranks is exact in float.
  model->buffers_from_host(std::vector<float>{float(rank), float(2 * rank), float(-rank)});
  train::average_buffers(*model, *comm);
  const float mean = static_cast<float>(world - 1) / 2.0f;
  EXPECT_EQ(model->buffers_to_host(), (std::vector<float>{mean, 2 * mean, -mean}));
}

TEST(StateTransfer, ReplicaReducerSumsOverTheRanks) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  train::CommReplicaReducer reducer(*comm);
  EXPECT_EQ(reducer.replicas(), world);
  std::vector<float> v = {float(rank + 1), 0.5f};
  reducer.sum(v.data(), v.size());
  EXPECT_EQ(v, (std::vector<float>{float(world * (world + 1) / 2), 0.5f * float(world)}));
}

TEST(StateTransfer, ReplicaReducerGathersInRankOrder) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  train::CommReplicaReducer reducer(*comm);
  const std::vector<float> mine = {float(rank), -0.25f * float(rank), 7.0f};
  std::vector<float> all(3 * static_cast<std::size_t>(world), -1.0f);
  reducer.gather(mine.data(), all.data(), mine.size());
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(all[3 * r], float(r));
    EXPECT_EQ(all[3 * r + 1], -0.25f * float(r));
    EXPECT_EQ(all[3 * r + 2], 7.0f);
  }
}
