// hf_gpt2.cc — the hf-gpt2 format (model_files.h): a GPT-2-shaped Mirror model as Hugging Face's
// GPT2LMHeadModel directory (model.safetensors + config.json) and back. The names map one to one; Hugging
// Face's Conv1D weights are [in, out] where Mirror's linear weights are [out, in], so those are transposed; the
// head is tied to wte and not written. Mirror's training window (sample_shape, shorter than n_positions when
// trained with --context) travels in the safetensors metadata as "mirror.context". A "gpt2" tokenizer's files
// are Hugging Face's vocab.json and merges.txt, written beside the weights.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "mirror/data/tokenizer.h"
#include "mirror/error.h"
#include "mirror/train/gpt2_shape.h"
#include "mirror/train/safetensors.h"
#include "model_files.h"

namespace mirror::train {
namespace {

constexpr const char* kContextKey = "mirror.context";

// One parameter under both names, with Mirror's shape; transposed: a linear weight (Conv1D in Hugging Face).
struct Mapping {
  std::string mirror, hf;  // hf without the "transformer." prefix
  std::vector<std::int64_t> shape;
  bool transposed = false;
};

std::vector<Mapping> gpt2_mappings(const Gpt2Shape& g) {
  const std::int64_t C = g.channels;
  std::vector<Mapping> m = {{"wte.weight", "wte.weight", {g.vocab, C}}, {"wpe.weight", "wpe.weight", {g.context, C}}};
  for (std::int64_t l = 0; l < g.layers; ++l) {
    const std::string p = "h" + std::to_string(l) + "_", h = "h." + std::to_string(l) + ".";
    for (const char* ln : {"1", "2"}) {
      m.push_back({p + "ln" + ln + ".weight", h + "ln_" + ln + ".weight", {C}});
      m.push_back({p + "ln" + ln + ".bias", h + "ln_" + ln + ".bias", {C}});
    }
    m.push_back({p + "attn.qkv.weight", h + "attn.c_attn.weight", {3 * C, C}, true});
    m.push_back({p + "attn.qkv.bias", h + "attn.c_attn.bias", {3 * C}});
    m.push_back({p + "attn.proj.weight", h + "attn.c_proj.weight", {C, C}, true});
    m.push_back({p + "attn.proj.bias", h + "attn.c_proj.bias", {C}});
    m.push_back({p + "fc.weight", h + "mlp.c_fc.weight", {4 * C, C}, true});
    m.push_back({p + "fc.bias", h + "mlp.c_fc.bias", {4 * C}});
    m.push_back({p + "proj.weight", h + "mlp.c_proj.weight", {C, 4 * C}, true});
    m.push_back({p + "proj.bias", h + "mlp.c_proj.bias", {C}});
  }
  m.push_back({"ln_f.weight", "ln_f.weight", {C}});
  m.push_back({"ln_f.bias", "ln_f.bias", {C}});
  return m;
}

// A [rows, cols] matrix as [cols, rows].
NamedTensor transposed(NamedTensor t, std::string name) {
  const std::int64_t rows = t.shape[0], cols = t.shape[1];
  NamedTensor out{std::move(name), {cols, rows}, std::vector<float>(t.values.size())};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out.values[c * rows + r] = t.values[r * cols + c];
  return out;
}

std::vector<std::int64_t> hf_shape(const Mapping& m) {
  return m.transposed ? std::vector<std::int64_t>{m.shape[1], m.shape[0]} : m.shape;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

nlohmann::ordered_json gpt2_config(const Gpt2Shape& g) {
  const std::int64_t special = g.vocab == 50257 ? 50256 : g.vocab - 1;  // GPT-2's <|endoftext|>
  return {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"n_embd", g.channels},
          {"n_head", g.heads}, {"n_layer", g.layers}, {"n_positions", g.context}, {"n_ctx", g.context},
          {"vocab_size", g.vocab}, {"activation_function", "gelu_new"}, {"layer_norm_epsilon", 1e-05},
          {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}, {"initializer_range", 0.02},
          {"tie_word_embeddings", true}, {"bos_token_id", special}, {"eos_token_id", special},
          {"torch_dtype", "float32"}};
}

// ---- import -----------------------------------------------------------------------------------------------

std::int64_t positive(const nlohmann::json& config, const std::string& file, const char* key, const char* fallback = "") {
  const char* used = config.contains(key) || !*fallback ? key : fallback;
  MIRROR_CHECK(config.contains(used) && config[used].is_number_integer() && config[used].get<std::int64_t>() > 0,
               kFormat, file << ": \"" << key << "\" is missing or not a positive whole number");
  return config[used].get<std::int64_t>();
}

// What Mirror's GPT-2 computes: refuse a config.json of another model or other arithmetic, naming the setting.
void check_gpt2_config(const nlohmann::json& c, const std::string& file) {
  const std::string type = c.value("model_type", "");
  MIRROR_CHECK(type == "gpt2", kFormat, file << ": model_type '" << type << "' is not gpt2; --format hf-gpt2 imports "
                                             << "Hugging Face GPT-2 (GPT2LMHeadModel) directories only");
  if (c.contains("architectures")) {
    MIRROR_CHECK(c["architectures"].is_array(), kFormat, file << ": \"architectures\" is not a list");
    for (const auto& a : c["architectures"])
      MIRROR_CHECK(a == "GPT2LMHeadModel" || a == "GPT2Model", kFormat,
                   file << ": architecture " << a.dump() << " is not GPT2LMHeadModel; --format hf-gpt2 imports GPT-2 only");
  }
  const std::string act = c.value("activation_function", "gelu_new");
  MIRROR_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", kFormat,
               file << ": activation_function '" << act << "' is not gelu_new, the tanh GELU Mirror's gelu computes");
  const double eps = c.value("layer_norm_epsilon", 1e-5);
  MIRROR_CHECK(std::fabs(eps - 1e-5) <= 1e-12, kFormat,
               file << ": layer_norm_epsilon " << eps << " is not GPT-2's 1e-05, which Mirror's GPT-2 uses");
  const bool inner_ok = !c.contains("n_inner") || c["n_inner"].is_null() || c["n_inner"] == 4 * positive(c, file, "n_embd");
  MIRROR_CHECK(inner_ok, kFormat, file << ": n_inner " << c["n_inner"].dump() << " is not 4 x n_embd as in GPT-2");
  MIRROR_CHECK(c.value("scale_attn_weights", true) && !c.value("scale_attn_by_inverse_layer_idx", false), kFormat,
               file << ": attention scaled otherwise than by 1/sqrt(head size) (scale_attn_weights, "
                       "scale_attn_by_inverse_layer_idx)");
}

Gpt2Shape shape_from_config(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / "config.json").string();
  const nlohmann::json c = read_json_file(dir, "config.json");
  check_gpt2_config(c, file);
  Gpt2Shape g{positive(c, file, "n_layer"), positive(c, file, "n_head"), positive(c, file, "n_embd"),
              positive(c, file, "n_positions", "n_ctx"), positive(c, file, "vocab_size")};
  MIRROR_CHECK(g.channels % g.heads == 0, kFormat,
               file << ": n_embd " << g.channels << " is not a multiple of n_head " << g.heads);
  return g;
}

// The file's tensors by their name without "transformer.", the attention-mask buffers left out.
std::map<std::string, NamedTensor> hf_tensors(const std::string& file, std::vector<NamedTensor> tensors) {
  std::map<std::string, NamedTensor> out;
  for (NamedTensor& t : tensors) {
    std::string name = t.name.rfind("transformer.", 0) == 0 ? t.name.substr(12) : t.name;
    const auto ends = [&](const std::string& s) { return name.size() > s.size() && name.ends_with(s); };
    if (name.rfind("h.", 0) == 0 && (ends(".attn.bias") || ends(".attn.masked_bias"))) continue;
    MIRROR_CHECK(!out.count(name), kFormat, file << " holds tensor '" << name << "' twice (with and without transformer.)");
    out[name] = std::move(t);
  }
  return out;
}

// Refuses an lm_head.weight that is not wte: Mirror's head is tied to it.
void check_lm_head(const std::string& file, std::map<std::string, NamedTensor>& tensors) {
  const auto head = tensors.find("lm_head.weight");
  if (head == tensors.end()) return;
  const auto wte = tensors.find("wte.weight");
  MIRROR_CHECK(wte != tensors.end() && head->second.shape == wte->second.shape && head->second.values == wte->second.values,
               kFormat, file << ": lm_head.weight differs from transformer.wte.weight; Mirror's GPT-2 head is tied to "
                             << "the token embedding, so an untied head cannot be imported");
  tensors.erase(head);
}

std::int64_t training_context(const std::map<std::string, std::string>& metadata, std::int64_t positions) {
  const auto it = metadata.find(kContextKey);
  if (it == metadata.end()) return positions;
  const std::int64_t t = std::atoll(it->second.c_str());
  return t >= 1 && t <= positions ? t : positions;
}

}  // namespace

ExportFiles hf_gpt2_export(const CheckpointState& s) {
  const Gpt2Shape g = check_gpt2_shaped(s.model_description, s.num_classes);
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : s.params) by_name[t.name] = &t;
  const std::vector<Mapping> mappings = gpt2_mappings(g);
  ExportFiles files;
  for (const Mapping& m : mappings) {
    const auto it = by_name.find(m.mirror);
    MIRROR_CHECK(it != by_name.end() && it->second->shape == m.shape, kInvalidArgument,
                 "the checkpoint's parameter '" << m.mirror << "' is missing or not of GPT-2's shape " << shape_text(m.shape));
    const std::string hf = "transformer." + m.hf;
    files.tensors.push_back(m.transposed ? transposed(*it->second, hf) : NamedTensor{hf, m.shape, it->second->values});
  }
  MIRROR_CHECK(s.params.size() == mappings.size() && s.buffers.empty(), kInvalidArgument,
               "the checkpoint holds " << s.params.size() << " parameters and " << s.buffers.size()
                                       << " buffers where GPT-2 has " << mappings.size() << " and none");
  files.metadata = {{"format", "pt"}, {kContextKey, std::to_string(s.sample_shape.empty() ? g.context : s.sample_shape[0])}};
  files.texts.emplace_back("config.json", gpt2_config(g).dump(2) + "\n");
  if (s.tokenizer == "gpt2")  // its files are Hugging Face's own: vocab.json and merges.txt beside the weights
    for (const NamedBlob& blob : s.tokenizer_files)
      if (blob.name == "vocab.json" || blob.name == "merges.txt") files.texts.emplace_back(blob.name, blob.bytes);
  return files;
}

// The tokenizer of an imported GPT-2: DIR's vocab.json and merges.txt (Hugging Face's files) as the "gpt2"
// tokenizer, loaded once to check them and that its ids fit the model's vocabulary; without either file none
// ("": mirror-generate then says the checkpoint has no tokenizer). One of the two alone is refused.
void import_gpt2_tokenizer(const std::string& dir, ImportedModel& m, std::int64_t vocab) {
  namespace fs = std::filesystem;
  const fs::path vocab_file = fs::path(dir) / "vocab.json", merges_file = fs::path(dir) / "merges.txt";
  const bool has_vocab = fs::exists(vocab_file), has_merges = fs::exists(merges_file);
  m.tokenizer = "";
  if (!has_vocab && !has_merges) return;
  MIRROR_CHECK(has_vocab && has_merges, kFormat,
               dir << " has " << (has_vocab ? "vocab.json but no merges.txt" : "merges.txt but no vocab.json")
                   << "; GPT-2's tokenizer needs both (or neither, for weights without a tokenizer)");
  std::vector<data::TokenizerBlob> blobs;
  for (const fs::path& file : {vocab_file, merges_file}) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    MIRROR_CHECK(in.good() || in.eof(), kIo, "cannot read " << file.string());
    blobs.push_back({file.filename().string(), bytes.str()});
  }
  const std::unique_ptr<data::Tokenizer> tokenizer = data::load_tokenizer("gpt2", blobs);
  MIRROR_CHECK(tokenizer->vocab_size() <= vocab, kFormat,
               dir << ": vocab.json holds " << tokenizer->vocab_size() << " tokens, more than config.json's vocab_size "
                   << vocab);
  m.tokenizer = "gpt2";
  for (data::TokenizerBlob& b : blobs) m.tokenizer_files.push_back({b.name, std::move(b.bytes)});
}

ImportedModel hf_gpt2_import(const std::string& dir) {
  const Gpt2Shape g = shape_from_config(dir);
  const std::string file = (std::filesystem::path(dir) / "model.safetensors").string();
  SafetensorsContent content = read_safetensors(file);
  std::map<std::string, NamedTensor> tensors = hf_tensors(file, std::move(content.tensors));
  check_lm_head(file, tensors);
  ImportedModel m;
  for (const Mapping& map : gpt2_mappings(g)) {
    const auto it = tensors.find(map.hf);
    MIRROR_CHECK(it != tensors.end(), kFormat, file << " lacks tensor 'transformer." << map.hf << "' of shape "
                                                    << shape_text(hf_shape(map)) << " (config.json's sizes)");
    MIRROR_CHECK(it->second.shape == hf_shape(map), kFormat,
                 file << ": tensor '" << map.hf << "' has shape " << shape_text(it->second.shape) << " where config.json's "
                      << "sizes make it " << shape_text(hf_shape(map)));
    m.tensors[map.mirror] = map.transposed ? transposed(std::move(it->second), map.mirror)
                                           : NamedTensor{map.mirror, map.shape, std::move(it->second.values)};
    tensors.erase(it);
  }
  MIRROR_CHECK(tensors.empty(), kFormat, file << " holds tensor '" << tensors.begin()->first
                                              << "', which GPT-2 of config.json's sizes does not have");
  m.description = gpt2_description(g).to_json();
  m.sample_shape = {training_context(content.metadata, g.context)};
  m.num_classes = g.vocab;
  import_gpt2_tokenizer(dir, m, g.vocab);
  m.source = file;
  m.format = "hf-gpt2";
  return m;
}

}  // namespace mirror::train
