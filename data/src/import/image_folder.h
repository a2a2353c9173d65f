// image_folder.h — an image-folder dataset (private): ROOT/<class>/<image>, one sub-folder per class, the
// classes in sorted (byte) order, images in sorted order within each class. PNG, JPEG, BMP and PNM files are
// decoded with stb_image (Debian libstb-dev). All images must have one size; grayscale images give samples
// [H, W], colour ones [3, H, W] (a grayscale image among colour ones is replicated into 3 equal channels,
// which loses nothing). An alpha channel is accepted only when fully opaque (then it carries nothing);
// 16-bit images are refused, since Mirror stores 8-bit pixels.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "array_source.h"

namespace mirror::data {

struct ImageFolder {
  std::string root;
  std::vector<std::string> class_names;  // sub-folder names, sorted
  std::vector<std::string> files;        // every image, class by class
  std::vector<int32_t> labels;           // the class of each file
  std::vector<int> channels_in_file;     // what stb_image reports per file: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  int64_t height = 0, width = 0;
  int64_t channels = 1;                  // of the samples: 1 or 3
};

// Lists ROOT and reads every image's header (not its pixels): sizes, channel counts, 16-bit depth.
// Throws kIo/kFormat naming the folder or the file: no class folders, a file that is not an image or whose
// header does not decode, images of different sizes, 16-bit images.
std::shared_ptr<const ImageFolder> scan_image_folder(const std::string& root);

// The pixels, uint8, shape (N, H, W) or (N, 3, H, W), channel-first; decoded a block of images at a time.
// Throws kFormat naming the file when an image does not decode or has a partly transparent alpha channel.
std::unique_ptr<ArraySource> open_image_pixels(std::shared_ptr<const ImageFolder> folder);
// The labels, int32, shape (N).
std::unique_ptr<ArraySource> open_image_labels(std::shared_ptr<const ImageFolder> folder);

}  // namespace mirror::data
