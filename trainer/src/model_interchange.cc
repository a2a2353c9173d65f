// model_interchange.cc — mirror/train/model_interchange.h: the export directory (created, filled, removed again
// on error), the safetensors format (model.safetensors + model.json), and the checkpoint an import makes.
#include "mirror/train/model_interchange.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "atomic_file.h"
#include "mirror/error.h"
#include "mirror/nn/model_build.h"
#include "mirror/train/safetensors.h"
#include "model_files.h"

namespace mirror::train {
namespace {

namespace fs = std::filesystem;
constexpr const char* kModelFormatName = "mirror-model";
constexpr const char* kTokenizerDir = "tokenizer";

// A tokenizer file's name becomes a file name in DIR/tokenizer: one plain name, nothing that leaves the directory.
void check_blob_name(const std::string& name, const std::string& where) {
  MIRROR_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos, kFormat,
               where << " names a tokenizer file '" << name << "', which is not a plain file name");
}

// ---- the safetensors format -------------------------------------------------------------------------------

ExportFiles safetensors_export(const CheckpointState& s) {
  ExportFiles files;
  files.tensors = s.params;
  files.tensors.insert(files.tensors.end(), s.buffers.begin(), s.buffers.end());
  files.metadata = {{"format", "pt"}};
  const nlohmann::json stored = nlohmann::json::parse(s.model_description, nullptr, false);
  nlohmann::ordered_json model = {
      {"format", kModelFormatName},
      {"model_description", stored.is_object() ? stored : nlohmann::json(s.model_description)},
      {"model_spec", s.model_spec},
      {"sample_shape", s.sample_shape},
      {"num_classes", s.num_classes},
      {"tokenizer", s.tokenizer},
      {"tokenizer_files", nlohmann::json::array()}};
  for (const NamedBlob& blob : s.tokenizer_files) {  // e.g. a SentencePiece "model": DIR/tokenizer/model
    check_blob_name(blob.name, "the checkpoint");
    model["tokenizer_files"].push_back(blob.name);
    files.texts.emplace_back(std::string(kTokenizerDir) + "/" + blob.name, blob.bytes);
  }
  files.texts.emplace_back("model.json", model.dump(2) + "\n");
  return files;
}

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::string& file, bool (nlohmann::json::*is)() const noexcept,
           const char* expected) {
  MIRROR_CHECK(j.contains(key) && (j[key].*is)(), kFormat, file << ": \"" << key << "\" is missing or not " << expected);
  return j[key].get<T>();
}

ImportedModel safetensors_import(const std::string& dir) {
  const std::string file = (fs::path(dir) / "model.json").string();
  const nlohmann::json j = read_json_file(dir, "model.json");
  MIRROR_CHECK(j.value("format", "") == kModelFormatName, kFormat,
               file << ": \"format\" is not \"" << kModelFormatName << "\"; not a model exported by mirror-ckpt export "
                    << "--format safetensors");
  ImportedModel m;
  MIRROR_CHECK(j.contains("model_description") && (j["model_description"].is_object() || j["model_description"].is_string()),
               kFormat, file << ": \"model_description\" is missing or neither a JSON model nor a model name");
  m.description = j["model_description"].is_string() ? j["model_description"].get<std::string>()
                                                      : j["model_description"].dump();
  m.sample_shape = required<std::vector<std::int64_t>>(j, "sample_shape", file, &nlohmann::json::is_array,
                                                       "an array of sizes");
  m.num_classes = required<std::int64_t>(j, "num_classes", file, &nlohmann::json::is_number_integer, "a whole number");
  m.tokenizer = j.contains("tokenizer") && j["tokenizer"].is_string() ? j["tokenizer"].get<std::string>() : "";
  m.model_spec = j.contains("model_spec") && j["model_spec"].is_string() ? j["model_spec"].get<std::string>() : "";
  for (const auto& name : j.value("tokenizer_files", nlohmann::json::array())) {
    MIRROR_CHECK(name.is_string(), kFormat, file << ": \"tokenizer_files\" holds " << name.dump() << ", not a file name");
    check_blob_name(name.get<std::string>(), file);
    m.tokenizer_files.push_back({name.get<std::string>(),
                                 read_binary_file(dir, std::string(kTokenizerDir) + "/" + name.get<std::string>())});
  }
  const std::string tensors_file = (fs::path(dir) / "model.safetensors").string();
  for (NamedTensor& t : read_safetensors(tensors_file).tensors) m.tensors[t.name] = std::move(t);
  m.source = tensors_file;
  m.format = "safetensors";
  return m;
}

// ---- the export directory ---------------------------------------------------------------------------------

void write_export(const std::string& out_dir, const ExportFiles& files) {
  std::error_code ec;
  MIRROR_CHECK(!fs::exists(out_dir, ec) || fs::is_directory(out_dir, ec), kIo,
               "--out " << out_dir << " exists and is not a directory");
  const bool created = !fs::exists(out_dir, ec);
  std::vector<fs::path> written;
  try {
    fs::create_directories(out_dir, ec);
    MIRROR_CHECK(!ec, kIo, "cannot create directory " << out_dir << ": " << ec.message());
    written.push_back(fs::path(out_dir) / "model.safetensors");
    write_safetensors(written.back().string(), files.tensors, files.metadata);
    for (const auto& [name, text] : files.texts) {
      written.push_back(fs::path(out_dir) / name);
      if (!fs::exists(written.back().parent_path())) written.insert(written.end() - 1, written.back().parent_path());
      fs::create_directories(written.back().parent_path());
      write_file_atomically(written.back().string(), [&](std::ostream& out) { out << text; });
    }
  } catch (...) {
    std::error_code ignored;
    if (created) fs::remove_all(out_dir, ignored);
    else
      for (auto p = written.rbegin(); p != written.rend(); ++p) fs::remove(*p, ignored);  // files, then their folders
    throw;
  }
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

// The model's tensors of `layout` taken out of `tensors` in its order; kFormat naming one missing or mis-shaped.
std::vector<NamedTensor> take_tensors(const std::vector<nn::ParamInfo>& layout, ImportedModel& m, const char* what) {
  std::vector<NamedTensor> out;
  for (const nn::ParamInfo& p : layout) {
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    const auto it = m.tensors.find(p.name);
    MIRROR_CHECK(it != m.tensors.end(), kFormat,
                 m.source << " lacks " << what << " '" << p.name << "' of shape " << shape_text(shape)
                          << ", which the model it describes has");
    MIRROR_CHECK(it->second.shape == shape, kFormat,
                 m.source << ": tensor '" << p.name << "' has shape " << shape_text(it->second.shape)
                          << " where the model it describes has " << shape_text(shape));
    out.push_back(std::move(it->second));
    m.tensors.erase(it);
  }
  return out;
}

}  // namespace

nlohmann::json read_json_file(const std::string& dir, const std::string& name) {
  const std::string file = (fs::path(dir) / name).string();
  std::ifstream in(file);
  MIRROR_CHECK(in.is_open(), kIo, "cannot open " << file << " (is " << dir << " an exported model directory?)");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  MIRROR_CHECK(!j.is_discarded() && j.is_object(), kFormat, file << " is not a JSON object");
  return j;
}

std::string read_binary_file(const std::string& dir, const std::string& name) {
  const std::string file = (fs::path(dir) / name).string();
  std::ifstream in(file, std::ios::binary);
  MIRROR_CHECK(in.is_open(), kIo, "cannot open " << file);
  std::stringstream bytes;
  bytes << in.rdbuf();
  MIRROR_CHECK(!in.bad(), kIo, "reading " << file << " failed");
  return bytes.str();
}

CheckpointState imported_checkpoint(ImportedModel m) {
  const auto model = nn::build_model(m.description, nn::Shape(m.sample_shape), m.num_classes, nn::Device{});
  CheckpointState s;
  s.params = take_tensors(model->parameters(), m, "parameter");
  s.buffers = take_tensors(model->buffers(), m, "buffer");
  MIRROR_CHECK(m.tensors.empty(), kFormat,
               m.source << " holds tensor '" << m.tensors.begin()->first << "', which the model it describes does not have");
  s.model_description = model->description();
  // Without a --model value of its own (an hf-gpt2 import), the spec says where the model came from.
  s.model_spec = m.model_spec.empty() ? m.format + " import of " + m.source : m.model_spec;
  s.sample_shape = model->input_sample_shape();
  s.input_features = model->input_features();
  s.num_classes = model->num_classes();
  s.tokenizer = m.tokenizer;
  s.tokenizer_files = std::move(m.tokenizer_files);
  s.optimizer_kind = "none";
  s.config_json = nlohmann::json{{"imported_from", m.source}, {"import_format", m.format}}.dump();
  return s;
}

ModelFormat parse_model_format(const std::string& name) {
  if (name == "safetensors") return ModelFormat::kSafetensors;
  if (name == "hf-gpt2") return ModelFormat::kHfGpt2;
  MIRROR_THROW(kInvalidArgument, "--format '" << name << "' is not one of safetensors, hf-gpt2");
}

void export_model(const CheckpointState& state, ModelFormat format, const std::string& out_dir) {
  const ExportFiles files = format == ModelFormat::kHfGpt2 ? hf_gpt2_export(state) : safetensors_export(state);
  write_export(out_dir, files);
}

CheckpointState import_model(const std::string& dir, ModelFormat format) {
  MIRROR_CHECK(fs::is_directory(dir), kIo, "import takes an exported model directory; " << dir << " is not one");
  return imported_checkpoint(format == ModelFormat::kHfGpt2 ? hf_gpt2_import(dir) : safetensors_import(dir));
}

}  // namespace mirror::train
