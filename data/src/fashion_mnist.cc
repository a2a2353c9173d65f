// fashion_mnist.cc — convert_fashion_mnist: the four IDX files of Debian's dataset-fashion-mnist to Mirror's format.
#include <filesystem>

#include "mirror/data/convert.h"
#include "mirror/data/idx.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

struct Split {
  IdxArray images, labels;
};

Split load_split(const std::string& dir, const std::string& prefix) {
  const std::string images = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  Split s;
  s.images = parse_idx(read_maybe_gzipped(images), 3, images);
  s.labels = parse_idx(read_maybe_gzipped(labels), 1, labels);
  MIRROR_CHECK(s.images.dims[1] == 28 && s.images.dims[2] == 28, kFormat,
               "IDX file '" << images << "' holds " << s.images.dims[1] << "x" << s.images.dims[2]
                            << " images; expected 28x28");
  MIRROR_CHECK(s.images.dims[0] == s.labels.dims[0], kFormat,
               "'" << images << "' has " << s.images.dims[0] << " images but '" << labels << "' has "
                   << s.labels.dims[0] << " labels; expected equal counts");
  for (std::size_t i = 0; i < s.labels.data.size(); ++i) {
    MIRROR_CHECK(s.labels.data[i] < 10, kFormat, "'" << labels << "': label " << int(s.labels.data[i]) << " at index "
                                                     << i << " is out of range; expected 0..9");
  }
  return s;
}

}  // namespace

std::vector<std::string> convert_fashion_mnist(const std::string& src_dir, const std::string& out,
                                               const WriteOptions& options) {
  std::error_code ec;
  const bool present = std::filesystem::exists(src_dir + "/train-images-idx3-ubyte.gz", ec);
  if (!present && src_dir == kFashionMnistDir) {
    MIRROR_THROW(kIo, "Fashion-MNIST not found in " << src_dir
                                                    << "; install it with: apt-get install dataset-fashion-mnist");
  }
  MIRROR_CHECK(present, kIo, "Fashion-MNIST not found in '" << src_dir << "' (no train-images-idx3-ubyte.gz); "
                                 << "expected the four IDX .gz files there, e.g. from: apt-get install "
                                    "dataset-fashion-mnist (installs them in " << kFashionMnistDir << ")");
  const Split train = load_split(src_dir, "train");
  const Split test = load_split(src_dir, "t10k");
  DatasetHeader header;
  header.num_classes = 10;
  header.sample_shape = {28, 28};
  header.x_dtype = DType::kUInt8;
  header.scaling = Scaling{1.0 / 255.0, 0.0, 1.0};
  DatasetWriter writer(out, header, train.images.dims[0], test.images.dims[0], options);
  for (const auto& [name, split] : {std::pair<const char*, const Split*>{"train", &train}, {"test", &test}}) {
    std::vector<int32_t> y(split->labels.data.begin(), split->labels.data.end());
    writer.append(name, split->images.data.data(), y.data(), static_cast<int64_t>(y.size()));
  }
  writer.close();
  return writer.files();
}

}  // namespace mirror::data
