// checkpoint_model.cc — mirror/train/checkpoint_model.h: a --checkpoint value to a file, and a checkpoint's
// tensors checked against the model its description builds.
#include "mirror/train/checkpoint_model.h"

#include <filesystem>
#include <vector>

#include "mirror/error.h"
#include "mirror/nn/model_build.h"

namespace mirror::train {
namespace {

// The checkpoint's tensors as one flat array in the model's layout, or kFormat when their names or shapes
// are not the ones the checkpoint's own model description builds.
std::vector<float> checked_values(const std::string& path, const char* what, const std::vector<NamedTensor>& stored,
                                  const std::vector<nn::ParamInfo>& layout, std::int64_t total) {
  std::vector<float> flat;
  bool same = stored.size() == layout.size();
  for (std::size_t i = 0; same && i < layout.size(); ++i)
    same = stored[i].name == layout[i].name && stored[i].shape == layout[i].shape;
  for (const auto& t : stored) flat.insert(flat.end(), t.values.begin(), t.values.end());
  MIRROR_CHECK(same && static_cast<std::int64_t>(flat.size()) == total, kFormat,
               "checkpoint " << path << " holds " << flat.size() << " " << what << " in " << stored.size()
                             << " tensors, but the model it describes has " << total << " in " << layout.size()
                             << " tensors of other names or shapes");
  return flat;
}

}  // namespace

std::string resolve_checkpoint(const std::string& path, bool best, std::ostream& warnings) {
  if (best) {
    MIRROR_CHECK(std::filesystem::is_directory(path), kInvalidArgument,
                 "--best takes a checkpoint directory (it reads DIR/best.h5), got " << path);
    const std::string file = (std::filesystem::path(path) / "best.h5").string();
    MIRROR_CHECK(std::filesystem::exists(file), kIo, "no best.h5 in " << path << "; train with --keep-best METRIC");
    return file;
  }
  if (!std::filesystem::is_directory(path)) return path;
  std::vector<std::string> skipped;
  auto latest = latest_valid_checkpoint(path, &skipped);
  for (const auto& s : skipped) warnings << "warning: skipping corrupt checkpoint " << s << "\n";
  MIRROR_CHECK(latest.has_value(), kIo, "no valid checkpoint (ckpt-*.h5) in directory " << path);
  return *latest;
}

std::unique_ptr<nn::Model> model_from_checkpoint(const std::string& path, const CheckpointState& state,
                                                 const nn::Device& device) {
  auto model = nn::build_model(state.model_description, nn::Shape(state.sample_shape), state.num_classes, device);
  model->params_from_host(checked_values(path, "parameters", state.params, model->parameters(), model->num_parameters()));
  model->buffers_from_host(
      checked_values(path, "buffer values", state.buffers, model->buffers(), model->num_buffer_values()));
  return model;
}

}  // namespace mirror::train
