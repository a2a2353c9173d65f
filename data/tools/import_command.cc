// import_command.cc — flags of `mirror-data import` and the summary it prints.
#include "import_command.h"

#include <cstdio>

#include "mirror/cli_checks.h"
#include "mirror/data/convert.h"
#include "mirror/data/llmc.h"
#include "mirror/error.h"

ImportCommand::ImportCommand(CLI::App& app) {
  mirror::data::ImportOptions& o = options_;
  cmd_ = app.add_subcommand("import",
                            "Convert your own data to Mirror's format: a .npz (keys x/y or x_train/y_train/x_test/"
                            "y_test), an HDF5 file (--x/--y name its datasets), an image folder (SRC/<class>/<image>), "
                            "a .npy pair (--x X.npy --y Y.npy), or llm.c token shards (a .bin file with --test FILE, or a "
                            "directory of *_train*.bin and *_val*.bin) into a token dataset");
  cmd_->add_option("src", o.source, "Input: .npz, .h5/.hdf5, a folder of class sub-folders, or the x .npy");
  cmd_->add_option("--out", out_, "Output file <stem>.h5 (with --shards K: <stem>-IIIII-of-KKKKK.h5)")->required();
  cmd_->add_option("--x", o.x_name, "Samples: .npz key, HDF5 dataset path (/images), or .npy file");
  cmd_->add_option("--y", o.y_name, "Labels (integer class ids): .npz key, HDF5 dataset path, or .npy file");
  cmd_->add_option("--test", o.test_source, "Test data: another input of the same kind (for .npy: the x file)");
  cmd_->add_option("--test-x", o.test_x_name, "Test samples' name (default: --x's), in --test or else in SRC");
  cmd_->add_option("--test-y", o.test_y_name, "Test labels' name (default: --y's), in --test or else in SRC");
  cmd_->add_option("--test-fraction", o.test_fraction,
                   "Without a test set: move this fraction of SRC's samples (drawn from --seed) to the test split")
      ->check(mirror::cli::number_in(0.0, 1.0));
  cmd_->add_option("--seed", o.seed, "Seed of the --test-fraction draw")->capture_default_str();
  cmd_->add_option("--layout", layout_, "nchw: samples stored as given; nhwc: (N, H, W, C) input transposed to (N, C, H, W)")
      ->capture_default_str()->check(CLI::IsMember({"nchw", "nhwc"}));
  cmd_->add_option("--x-dtype", x_dtype_, "Stored sample type: uint8 or float32 (default: uint8 for uint8/bool input, "
                                          "float32 otherwise); a value the type cannot hold is refused")
      ->check(CLI::IsMember({"uint8", "float32"}));
  cmd_->add_option("--x-scale", x_scale_, "Scale the reader applies to stored values (default: 1/255 for uint8, 1 for float32)");
  cmd_->add_option("--num-classes", o.num_classes, "Number of classes (default: the number of class names, else the largest label + 1)")
      ->check(mirror::cli::integer_in(1, 1 << 24));
  cmd_->add_option("--class-names", o.class_names, "Class names, comma-separated, one per class (an image folder's "
                                                   "are its sub-folder names)")->delimiter(',');
  cmd_->add_option("--shards", o.write.shards, "Write K shard files <stem>-IIIII-of-KKKKK.h5 instead of one file")
      ->check(mirror::cli::integer_in(1, 99999));
  cmd_->add_option("--chunk", o.write.chunk_samples, "Samples per HDF5 chunk of x (0: about 256 KiB per chunk)")
      ->check(mirror::cli::non_negative_integer());
  cmd_->add_option("--gzip", o.write.gzip_level, "Deflate level 1-9 for x (0: none; fastest random reads)")->check(mirror::cli::integer_in(0, 9));
}

void ImportCommand::run() {
  namespace data = mirror::data;
  if (data::is_llmc_source(options_.source)) return run_llmc();
  options_.layout = data::parse_layout(layout_);
  if (!x_dtype_.empty()) options_.x_dtype = x_dtype_ == "uint8" ? data::DType::kUInt8 : data::DType::kFloat32;
  if (cmd_->count("--x-scale")) options_.x_scale = x_scale_;
  const data::ImportSummary s = data::import_dataset(out_, options_);
  std::printf("imported %s: %lld train + %lld test samples of shape ", s.kind.c_str(), static_cast<long long>(s.train),
              static_cast<long long>(s.test));
  for (std::size_t i = 0; i < s.sample_shape.size(); ++i) std::printf("%s%lld", i ? " x " : "", static_cast<long long>(s.sample_shape[i]));
  std::printf(" (%s), %lld classes\n", data::to_string(s.x_dtype), static_cast<long long>(s.num_classes));
  for (const auto& f : s.files) std::printf("wrote %s\n", f.c_str());
}

// llm.c's token shards: a token dataset (GPT-2 tokens), the splits from the shard names or --test.
void ImportCommand::run_llmc() {
  namespace data = mirror::data;
  // A token dataset is one file read per window, so the labelled-sample options have no meaning here.
  for (const char* flag : {"--shards", "--x", "--y", "--test-x", "--test-y", "--test-fraction", "--layout",
                           "--x-dtype", "--x-scale", "--num-classes", "--class-names", "--chunk", "--gzip"})
    MIRROR_CHECK(cmd_->count(flag) == 0, kInvalidArgument,
                 "mirror-data import: " << flag << " does not apply to llm.c token shards (" << options_.source
                                        << "): they become one token dataset file, which each rank reads per window");
  const data::LlmcImport plan = data::plan_llmc_import(options_.source, options_.test_source);
  data::write_llmc_dataset(out_, plan);
  std::printf("imported llm.c shards: %lld train tokens from %zu file(s), %lld test tokens from %zu file(s) "
              "(gpt2, vocabulary 50257)\nwrote %s\n",
              static_cast<long long>(plan.train_tokens), plan.train.size(), static_cast<long long>(plan.test_tokens),
              plan.test.size(), out_.c_str());
}
