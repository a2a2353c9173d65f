// inspect.cc — inspect_report: what `mirror-data inspect` prints about a dataset (of samples, or of tokens).
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "mirror/data/convert.h"
#include "mirror/data/dataset.h"
#include "mirror/data/tokenizer.h"

namespace mirror::data {

namespace {

// The part of the report that differs for a token dataset: tokenizer, vocabulary, each split's tokens.
void report_tokens(const Dataset& ds, uintmax_t bytes, std::ostream& os) {
  const DatasetInfo& info = ds.info();
  os << "kind         tokens\n";
  os << "tokenizer    " << info.tokenizer;
  const std::vector<TokenizerBlob> blobs = read_tokenizer_blobs(ds);
  for (std::size_t i = 0; i < blobs.size(); ++i)
    os << (i == 0 ? " (files under /tokenizer: " : ", ") << blobs[i].name << " " << blobs[i].bytes.size() << " bytes"
       << (i + 1 == blobs.size() ? ")" : "");
  os << "\n";
  os << "vocabulary   " << info.vocab_size << " token ids\n";
  for (const char* name : {"train", "test"}) {
    const SplitInfo& s = ds.split(name);
    os << "/" << name << "       " << s.size << " tokens; " << (s.token_bytes == 2 ? "uint16" : "uint32") << "; chunk ";
    if (s.chunk_samples > 0) os << s.chunk_samples << " tokens"; else os << "none (contiguous)";
    if (s.text_bytes > 0) {
      os << "; text " << s.text_bytes << " bytes (" << std::setprecision(3)
         << static_cast<double>(s.text_bytes) / static_cast<double>(s.size) << " bytes per token)";
    } else {
      os << "; text bytes unknown (no bits per byte)";
    }
    os << "\n";
  }
  const double tokens = static_cast<double>(info.train_size + info.test_size);
  os << "on disk      " << bytes << " bytes (" << std::setprecision(2) << bytes / tokens << " bytes per token)\n";
}

}  // namespace

std::string inspect_report(const std::string& path) {
  const Dataset ds = Dataset::open(path);
  const DatasetInfo& info = ds.info();
  std::ostringstream os;
  uintmax_t bytes = 0;
  for (const auto& f : info.files) bytes += std::filesystem::file_size(f);
  os << "dataset      " << ds.describe() << "\n";
  os << "files        " << info.files.size() << " (" << std::fixed << std::setprecision(1) << bytes / 1048576.0
     << " MiB on disk)\n";
  os << "format       version " << info.format_version << "\n";
  if (info.text) {
    report_tokens(ds, bytes, os);
    return os.str();
  }
  os << "classes      " << info.num_classes;
  if (!info.class_names.empty()) {
    os << " (";
    for (std::size_t c = 0; c < info.class_names.size(); ++c) os << (c ? ", " : "") << info.class_names[c];
    os << ")";
  }
  os << "\n";
  os << "sample shape ";
  for (std::size_t i = 0; i < info.sample_shape.size(); ++i) os << (i ? " x " : "") << info.sample_shape[i];
  os << " (" << info.features << " features, " << to_string(info.x_dtype) << ")\n";
  os << std::setprecision(6) << std::defaultfloat;
  os << "scaling      (x * " << info.scaling.scale << " - " << info.scaling.mean << ") / " << info.scaling.std << "\n";
  for (const char* name : {"train", "test"}) {
    const SplitInfo& s = ds.split(name);
    os << "/" << name << "       " << s.size << " samples; x " << s.size;
    for (int64_t d : info.sample_shape) os << " x " << d;
    os << " " << to_string(info.x_dtype) << ", y " << s.size << " int32; chunk ";
    if (s.chunk_samples > 0) os << s.chunk_samples << " samples"; else os << "none (contiguous)";
    os << "\n  per shard  ";
    for (std::size_t i = 0; i < s.shard_sizes.size(); ++i) os << (i ? " " : "") << s.shard_sizes[i];
    os << "\n  histogram ";
    for (std::size_t c = 0; c < s.class_counts.size(); ++c) os << " " << c << ":" << s.class_counts[c];
    os << "\n";
  }
  return os.str();
}

}  // namespace mirror::data
