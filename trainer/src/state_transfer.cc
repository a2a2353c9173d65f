// state_transfer.cc — initial parameter broadcast, checkpoint capture, resume with compatibility checks.
#include "state_transfer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "mirror/error.h"

namespace mirror::train {
namespace {

void broadcast_floats(coll::Communicator& control, std::vector<float>& values) {
  if (values.empty()) return;  // the same size on every rank: a model without buffers
  control.broadcast(values.data(), values.size(), coll::DataType::kFloat32, 0);
}

bool same_layout(const std::vector<NamedTensor>& stored, const std::vector<nn::ParamInfo>& infos) {
  bool same = stored.size() == infos.size();
  for (std::size_t i = 0; same && i < infos.size(); ++i)
    same = stored[i].name == infos[i].name && stored[i].shape == infos[i].shape;
  return same;
}

// A version-1 checkpoint knew only a flat feature count: any sample shape of as many values matches it.
bool same_sample_shape(const CheckpointState& s, const nn::Model& model) {
  if (s.format_version < 2) return s.input_features == model.input_features();
  return nn::Shape(s.sample_shape) == model.input_sample_shape();
}

// Where two canonical model descriptions (JSON, format 2) first differ: "layer 4 ('pool1'): {...} in the
// checkpoint, {...} in this run"; empty when they are the same model (or one is not JSON: a version-1 spec).
std::string model_difference(const std::string& stored, const std::string& built) {
  if (stored == built) return "";
  const auto a = nlohmann::json::parse(stored, nullptr, false), b = nlohmann::json::parse(built, nullptr, false);
  if (a.is_discarded() || b.is_discarded() || !a.contains("layers") || !b.contains("layers")) return "";
  const auto &la = a["layers"], &lb = b["layers"];
  for (std::size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    const nlohmann::json none = "(none)";
    const auto& x = i < la.size() ? la[i] : none;
    const auto& y = i < lb.size() ? lb[i] : none;
    if (x == y) continue;
    const auto& named = x.is_object() ? x : y;
    return "layer " + std::to_string(i + 1) + " ('" + named.value("name", std::string("?")) + "') is " + x.dump() +
           " in the checkpoint but " + y.dump() + " in this run";
  }
  return a.dump() == b.dump() ? "" : "their settings outside the layer list differ";
}

// A model description for a message: whole when short, else its first 100 characters and "...".
std::string shortened(const std::string& description) {
  return description.size() <= 120 ? description : description.substr(0, 100) + "...";
}

// Throws kInvalidArgument when the checkpoint's model or optimizer differs from this run's.
void check_compatible(const std::string& path, const CheckpointState& s, const nn::Model& model,
                      const nn::Optimizer& optimizer) {
  const bool same = same_sample_shape(s, model) && s.num_classes == model.num_classes() &&
                    same_layout(s.params, model.parameters()) && same_layout(s.buffers, model.buffers());
  const std::string difference = s.format_version >= 2 ? model_difference(s.model_description, model.description()) : "";
  MIRROR_CHECK(same, kInvalidArgument,
               "checkpoint " << path << " holds model '" << shortened(s.model_description) << "' for samples of shape "
                             << nn::to_string(s.sample_shape) << " and " << s.num_classes
                             << " classes, but this run builds '" << shortened(model.description())
                             << "' for samples of shape " << nn::to_string(model.input_sample_shape()) << " and "
                             << model.num_classes() << " classes"
                             << (difference.empty() ? "" : " (first difference: " + difference + ")")
                             << "; pass the same --model and --data, or use another --checkpoint-dir");
  // The same parameters do not make the same model (max- against average-pooling, another dropout rate).
  MIRROR_CHECK(difference.empty(), kInvalidArgument,
               "checkpoint " << path << " holds another model than this run builds (the same parameters, but "
                             << difference << "); pass the --model it was trained with, or use another --checkpoint-dir");
  MIRROR_CHECK(s.optimizer_kind == to_string(optimizer.options().kind), kInvalidArgument,
               "checkpoint " << path << " was written with --optimizer " << s.optimizer_kind << ", this run uses "
                             << to_string(optimizer.options().kind));
  for (const std::string& name : optimizer.state_names()) {
    bool found = false;
    for (const NamedTensor& t : s.optimizer_state)
      found = found || (t.name == name && static_cast<std::int64_t>(t.values.size()) == optimizer.numel());
    MIRROR_CHECK(found, kFormat, "checkpoint " << path << " lacks optimizer state '" << name << "' of "
                                               << optimizer.numel() << " values");
  }
}

// The loader's augmentation is part of the data a run sees: a resumed run must use the checkpoint's (its
// configuration JSON holds it; files written before the flags existed had none).
void check_same_augmentation(const std::string& path, const CheckpointState& s, const TrainConfig& config) {
  const nlohmann::json stored = nlohmann::json::parse(s.config_json, nullptr, false);
  if (!stored.is_object()) return;
  const std::int64_t crop = stored.value("random_crop", std::int64_t{0});
  const bool hflip = stored.value("hflip", false);
  MIRROR_CHECK(crop == config.random_crop && hflip == config.hflip, kInvalidArgument,
               "checkpoint " << path << " was trained with --random-crop " << crop << (hflip ? " --hflip" : " (no --hflip)")
                             << ", this run uses --random-crop " << config.random_crop
                             << (config.hflip ? " --hflip" : " (no --hflip)")
                             << "; resume with the same augmentation flags");
}

std::vector<float> flat_values(const std::vector<NamedTensor>& tensors) {
  std::vector<float> flat;
  for (const NamedTensor& t : tensors) flat.insert(flat.end(), t.values.begin(), t.values.end());
  return flat;
}

std::vector<NamedTensor> named_tensors(const std::vector<nn::ParamInfo>& infos, const std::vector<float>& flat) {
  std::vector<NamedTensor> out;
  for (const nn::ParamInfo& p : infos)
    out.push_back(NamedTensor{p.name, p.shape,
                              std::vector<float>(flat.begin() + p.offset, flat.begin() + p.offset + p.numel)});
  return out;
}

}  // namespace

void init_and_broadcast_parameters(nn::Model& model, std::uint64_t seed, coll::Communicator& control) {
  std::vector<float> host(static_cast<std::size_t>(model.num_parameters()));
  if (control.rank() == 0) {
    model.init_parameters(seed);
    host = model.params_to_host();
  }
  broadcast_floats(control, host);
  if (control.rank() != 0) model.params_from_host(host);
}

CheckpointState capture_state(const nn::Model& model, const nn::Optimizer& optimizer, const RunPosition& position,
                              const TrainConfig& config, int world_size, const std::string& tokenizer,
                              const std::vector<NamedBlob>& tokenizer_files) {
  CheckpointState s;
  s.tokenizer = tokenizer;
  s.tokenizer_files = tokenizer_files;
  s.step = position.step;
  s.epoch = position.epoch;
  s.epoch_micro_step = position.micro;
  s.world_size = world_size;
  s.seed = config.seed;
  s.model_spec = config.model;
  s.model_description = model.description();
  s.sample_shape = model.input_sample_shape();
  s.input_features = model.input_features();
  s.num_classes = model.num_classes();
  s.config_json = to_json(config);
  s.metrics_jsonl = position.metrics_jsonl;
  s.epoch_loss_sum = position.loss_sum;
  s.epoch_correct = position.correct;
  s.epoch_samples = position.samples;
  s.loss_scale = position.loss_scale;
  s.loss_scale_good_steps = position.loss_scale_good_steps;
  s.params = named_tensors(model.parameters(), model.params_to_host());
  s.buffers = named_tensors(model.buffers(), model.buffers_to_host());
  s.optimizer_kind = to_string(optimizer.options().kind);
  s.optimizer_step = optimizer.step_count();
  for (const std::string& name : optimizer.state_names())
    s.optimizer_state.push_back(NamedTensor{name, {optimizer.numel()}, optimizer.state_to_host(name)});
  return s;
}

namespace {

// The first tensor whose name or shape differs from the model's, as a sentence; "" when all match.
std::string first_difference(const char* what, const std::vector<NamedTensor>& stored,
                             const std::vector<nn::ParamInfo>& infos) {
  for (std::size_t i = 0; i < std::max(stored.size(), infos.size()); ++i) {
    if (i >= stored.size())
      return std::string("the model's ") + what + " '" + infos[i].name + "' " + nn::to_string(infos[i].shape) +
             " is not in the checkpoint";
    if (i >= infos.size()) return std::string("the checkpoint's ") + what + " '" + stored[i].name + "' is not in the model";
    if (stored[i].name != infos[i].name || stored[i].shape != infos[i].shape)
      return std::string(what) + " " + std::to_string(i + 1) + " is '" + stored[i].name + "' " +
             nn::to_string(stored[i].shape) + " in the checkpoint but '" + infos[i].name + "' " +
             nn::to_string(infos[i].shape) + " in the model";
  }
  return "";
}

}  // namespace

void init_from_checkpoint(const std::string& path, nn::Model& model, coll::Communicator& control,
                          const CheckpointState* read) {
  std::int32_t status = 0;
  std::vector<float> params, buffers;
  std::exception_ptr failure;
  if (control.rank() == 0) {
    try {
      const CheckpointState state = read ? *read : read_checkpoint(path, CheckpointParts::kModel);
      std::string difference = first_difference("parameter", state.params, model.parameters());
      if (difference.empty()) difference = first_difference("buffer", state.buffers, model.buffers());
      MIRROR_CHECK(difference.empty(), kInvalidArgument,
                   "--init-from " << path << " does not fit this run's model: " << difference
                                  << "; pass the --model it was trained with (or leave --model out to take its model)");
      params = flat_values(state.params);
      buffers = flat_values(state.buffers);
    } catch (...) {
      failure = std::current_exception();
      status = -1;
    }
  }
  control.broadcast(&status, 1, coll::DataType::kInt32, 0);
  if (status == -1) {
    if (failure) std::rethrow_exception(failure);
    MIRROR_THROW(kRemote, "rank 0 could not load the --init-from checkpoint (its error says why)");
  }
  params.resize(static_cast<std::size_t>(model.num_parameters()));
  buffers.resize(static_cast<std::size_t>(model.num_buffer_values()));
  broadcast_floats(control, params);
  broadcast_floats(control, buffers);
  model.params_from_host(params);
  model.buffers_from_host(buffers);
}

bool resume_from_checkpoint(const TrainConfig& config, nn::Model& model, nn::Optimizer& optimizer, RunPosition& position,
                            coll::Communicator& control, std::string& path_out, std::ostream* out) {
  if (!config.resume.any()) return false;
  // Rank 0 decides: status 1 = loaded, 0 = nothing to resume from, -1 = failed (rank 0 raises its error).
  std::int32_t status = 0;
  CheckpointState state;
  std::exception_ptr failure;
  if (control.rank() == 0) {
    try {
      std::string path = config.resume.path;
      if (config.resume.kind == ResumeFrom::Kind::kLatest) {
        std::vector<std::string> skipped;
        auto latest = latest_valid_checkpoint(config.checkpoint_dir, &skipped);
        for (const std::string& s : skipped)
          if (out) *out << "warning: skipping corrupt checkpoint " << s << "\n";
        path = latest.value_or("");
      }
      if (!path.empty()) {
        state = read_checkpoint(path);
        check_compatible(path, state, model, optimizer);
        check_same_augmentation(path, state, config);
        MIRROR_CHECK(state.world_size == control.size() || state.epoch_micro_step == 0, kInvalidArgument,
                     "checkpoint " << path << " was written by " << state.world_size << " ranks in the middle of "
                                   << "an epoch; resume it with " << state.world_size << " ranks (a checkpoint "
                                   << "taken at an epoch boundary resumes with any number)");
        path_out = path;
        status = 1;
      } else if (out) {
        *out << "resume: no checkpoint in " << config.checkpoint_dir << "; starting from step 0\n";
      }
    } catch (...) {
      failure = std::current_exception();
      status = -1;
    }
  }
  control.broadcast(&status, 1, coll::DataType::kInt32, 0);
  if (status == -1) {
    if (failure) std::rethrow_exception(failure);
    MIRROR_THROW(kRemote, "rank 0 could not load the checkpoint to resume from (its error says why)");
  }
  if (status == 0) return false;

  std::int64_t header[7] = {state.step, state.epoch, state.epoch_micro_step, state.epoch_correct,
                            state.epoch_samples, state.optimizer_step, state.loss_scale_good_steps};
  double reals[2] = {state.epoch_loss_sum, state.loss_scale};
  control.broadcast(header, 7, coll::DataType::kInt64, 0);
  control.broadcast(reals, 2, coll::DataType::kFloat64, 0);
  const double loss_sum = reals[0];
  std::vector<float> values = control.rank() == 0 ? flat_values(state.params)
                                                  : std::vector<float>(static_cast<std::size_t>(model.num_parameters()));
  broadcast_floats(control, values);
  model.params_from_host(values);
  values = control.rank() == 0 ? flat_values(state.buffers)
                               : std::vector<float>(static_cast<std::size_t>(model.num_buffer_values()));
  broadcast_floats(control, values);
  model.buffers_from_host(values);
  for (const std::string& name : optimizer.state_names()) {
    values.assign(static_cast<std::size_t>(optimizer.numel()), 0.0f);
    if (control.rank() == 0)
      for (const NamedTensor& t : state.optimizer_state)
        if (t.name == name) values = t.values;
    broadcast_floats(control, values);
    optimizer.state_from_host(name, values);
  }
  optimizer.set_step_count(header[5]);
  position.step = header[0];
  position.epoch = header[1];
  position.micro = header[2];
  // The epoch's partial sums were reduced over all ranks when saved; rank 0 carries them on, the others
  // start from zero, so the epoch-end reduction gives the same totals as an uninterrupted run.
  const bool carry = control.rank() == 0;
  position.correct = carry ? header[3] : 0;
  position.samples = carry ? header[4] : 0;
  position.loss_sum = carry ? loss_sum : 0.0;
  position.metrics_jsonl = state.metrics_jsonl;
  position.loss_scale = reals[1];
  position.loss_scale_good_steps = header[6];
  return true;
}

}  // namespace mirror::train
