// image_folder.cc — listing an image folder, reading image headers, and decoding pixels with stb_image.
#include "image_folder.h"

#include <stb_image.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "mirror/error.h"

namespace mirror::data {

namespace fs = std::filesystem;

namespace {

bool is_hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* e : {".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".pnm"}) {
    if (ext == e) return true;
  }
  return false;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!is_hidden(e.path())) out.push_back(e.path());
  }
  MIRROR_CHECK(!ec, kIo, "cannot list folder '" << dir.string() << "': " << ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

void add_class(ImageFolder& f, const fs::path& dir) {
  const auto label = static_cast<int32_t>(f.class_names.size());
  f.class_names.push_back(dir.filename().string());
  for (const fs::path& p : sorted_entries(dir)) {
    MIRROR_CHECK(!fs::is_directory(p), kFormat,
                 "image folder '" << f.root << "': '" << p.string() << "' is a folder inside class folder '"
                                  << dir.filename().string() << "'; expected only image files there");
    MIRROR_CHECK(is_image_name(p), kFormat,
                 "image folder '" << f.root << "': '" << p.string()
                                  << "' is not an image file; expected .png, .jpg, .jpeg, .bmp, .pgm, .ppm or .pnm");
    int w = 0, h = 0, comp = 0;
    MIRROR_CHECK(stbi_info(p.c_str(), &w, &h, &comp) == 1, kFormat,
                 "image '" << p.string() << "' does not decode: " << stbi_failure_reason());
    MIRROR_CHECK(!stbi_is_16_bit(p.c_str()), kFormat,
                 "image '" << p.string() << "' has 16 bits per channel; expected 8-bit images (Mirror stores uint8 pixels)");
    if (f.files.empty()) {
      f.height = h;
      f.width = w;
    }
    MIRROR_CHECK(h == f.height && w == f.width, kFormat,
                 "image '" << p.string() << "' is " << w << "x" << h << " pixels but '" << f.files.front() << "' is "
                           << f.width << "x" << f.height << "; expected all images of one size (resize them first)");
    f.files.push_back(p.string());
    f.labels.push_back(label);
    f.channels_in_file.push_back(comp);
  }
}

class PixelSource : public ArraySource {
 public:
  explicit PixelSource(std::shared_ptr<const ImageFolder> f) : f_(std::move(f)), name_("image folder '" + f_->root + "'") {
    shape_ = {static_cast<int64_t>(f_->files.size())};
    if (f_->channels == 3) shape_.push_back(3);
    shape_.push_back(f_->height);
    shape_.push_back(f_->width);
  }
  const std::vector<int64_t>& shape() const override { return shape_; }
  ElemType type() const override { return ElemType::kUInt8; }
  const std::string& name() const override { return name_; }
  void read(int64_t rows, void* out) override {
    auto* p = static_cast<uint8_t*>(out);
    const auto plane = static_cast<std::size_t>(f_->height * f_->width);
    for (int64_t r = 0; r < rows; ++r, ++next_) decode(static_cast<std::size_t>(next_), p + r * plane * f_->channels);
  }

 private:
  // Decodes image i into `out` as C planes of H x W (stb_image gives interleaved H x W x C).
  void decode(std::size_t i, uint8_t* out) {
    const std::string& file = f_->files[i];
    const int in = f_->channels_in_file[i];
    const bool alpha = in == 2 || in == 4;
    const int c = static_cast<int>(f_->channels);
    const int want = c + (alpha ? 1 : 0);
    int w = 0, h = 0, comp = 0;
    stbi_uc* px = stbi_load(file.c_str(), &w, &h, &comp, want);
    MIRROR_CHECK(px != nullptr, kFormat, "image '" << file << "' does not decode: " << stbi_failure_reason());
    std::unique_ptr<stbi_uc, void (*)(void*)> owned(px, stbi_image_free);
    MIRROR_CHECK(w == f_->width && h == f_->height, kFormat,
                 "image '" << file << "' decoded as " << w << "x" << h << " pixels; its header said "
                           << f_->width << "x" << f_->height);
    const std::size_t pixels = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
    for (std::size_t q = 0; q < pixels; ++q) {
      const stbi_uc* src = px + q * static_cast<std::size_t>(want);
      MIRROR_CHECK(!alpha || src[c] == 255, kFormat,
                   "image '" << file << "' is partly transparent (alpha " << int(src[c]) << " at pixel " << q % w << ","
                             << q / w << "); expected opaque images: dropping the alpha channel would lose it");
      for (int k = 0; k < c; ++k) out[static_cast<std::size_t>(k) * pixels + q] = src[k];
    }
  }

  std::shared_ptr<const ImageFolder> f_;
  std::string name_;
  std::vector<int64_t> shape_;
  int64_t next_ = 0;
};

class LabelSource : public ArraySource {
 public:
  explicit LabelSource(std::shared_ptr<const ImageFolder> f)
      : f_(std::move(f)), name_("the class folders of '" + f_->root + "'"), shape_{static_cast<int64_t>(f_->labels.size())} {}
  const std::vector<int64_t>& shape() const override { return shape_; }
  ElemType type() const override { return ElemType::kInt32; }
  const std::string& name() const override { return name_; }
  void read(int64_t rows, void* out) override {
    std::memcpy(out, f_->labels.data() + next_, static_cast<std::size_t>(rows) * sizeof(int32_t));
    next_ += rows;
  }

 private:
  std::shared_ptr<const ImageFolder> f_;
  std::string name_;
  std::vector<int64_t> shape_;
  int64_t next_ = 0;
};

}  // namespace

std::shared_ptr<const ImageFolder> scan_image_folder(const std::string& root) {
  auto f = std::make_shared<ImageFolder>();
  f->root = root;
  std::error_code ec;
  MIRROR_CHECK(fs::is_directory(root, ec), kIo, "image folder '" << root << "' does not exist or is not a folder");
  for (const fs::path& p : sorted_entries(root)) {
    MIRROR_CHECK(fs::is_directory(p), kFormat,
                 "image folder '" << root << "': '" << p.filename().string()
                                  << "' is not a folder; expected one sub-folder per class (ROOT/<class>/<image>)");
    add_class(*f, p);
  }
  MIRROR_CHECK(!f->class_names.empty(), kFormat,
               "image folder '" << root << "' has no class sub-folders; expected ROOT/<class>/<image>");
  MIRROR_CHECK(!f->files.empty(), kFormat, "image folder '" << root << "' has class folders but no images");
  const bool colour = std::any_of(f->channels_in_file.begin(), f->channels_in_file.end(), [](int c) { return c >= 3; });
  f->channels = colour ? 3 : 1;
  return f;
}

std::unique_ptr<ArraySource> open_image_pixels(std::shared_ptr<const ImageFolder> folder) {
  return std::make_unique<PixelSource>(std::move(folder));
}

std::unique_ptr<ArraySource> open_image_labels(std::shared_ptr<const ImageFolder> folder) {
  return std::make_unique<LabelSource>(std::move(folder));
}

}  // namespace mirror::data
