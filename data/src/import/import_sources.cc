// import_sources.cc — resolving `mirror-data import`'s SRC, --x/--y, --test and --test-x/--test-y into
// openers of the arrays, per kind: .npy pair, .npz archive, HDF5 file, image folder.
#include "import_sources.h"

#include <algorithm>
#include <filesystem>

#include "h5_source.h"
#include "image_folder.h"
#include "mirror/error.h"
#include "npy.h"
#include "zip_archive.h"

namespace mirror::data {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.size() >= tail.size() && lower.compare(lower.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_hdf5_name(const std::string& s) {
  return ends_with(s, ".h5") || ends_with(s, ".hdf5") || ends_with(s, ".hdf") || ends_with(s, ".he5");
}

// The kind of `source` ("npy" when it is empty and x_name is a .npy file).
std::string kind_of(const std::string& source, const std::string& x_name) {
  if (source.empty()) {
    MIRROR_CHECK(ends_with(x_name, ".npy"), kInvalidArgument,
                 "import needs SRC (a .npz, .h5 or .hdf5 file, or an image folder) or --x X.npy --y Y.npy");
    return "npy";
  }
  std::error_code ec;
  if (fs::is_directory(source, ec)) return "images";
  if (ends_with(source, ".npz")) return "npz";
  if (ends_with(source, ".npy")) return "npy";
  if (is_hdf5_name(source)) return "hdf5";
  MIRROR_THROW(kInvalidArgument, "cannot tell what '" << source << "' is from its name; expected a folder of class "
                                                      << "sub-folders, a .npz, a .npy (with --y), or an .h5/.hdf5 file");
}

// --- .npy pairs -----------------------------------------------------------------------------------------

ArrayOpener npy_file(const std::string& path) {
  return [path] { return open_npy(open_file_stream(path)); };
}

ImportSources npy_sources(const ImportOptions& o) {
  ImportSources s{"npy", {}, std::nullopt};
  const std::string x = o.source.empty() ? o.x_name : o.source;
  MIRROR_CHECK(o.source.empty() || o.x_name.empty() || o.x_name == o.source, kInvalidArgument,
               "SRC '" << o.source << "' is the x .npy file; --x '" << o.x_name << "' names another: give one of them");
  MIRROR_CHECK(!o.y_name.empty(), kInvalidArgument, "a .npy import needs the labels too: --y LABELS.npy");
  s.train = {npy_file(x), npy_file(o.y_name), {}, "'" + x + "' / '" + o.y_name + "'"};
  const std::string tx = !o.test_source.empty() ? o.test_source : o.test_x_name;
  if (!tx.empty()) {
    MIRROR_CHECK(!o.test_y_name.empty(), kInvalidArgument,
                 "a .npy test set needs its labels too: --test X_TEST.npy --test-y Y_TEST.npy");
    s.test = SplitSource{npy_file(tx), npy_file(o.test_y_name), {}, "'" + tx + "' / '" + o.test_y_name + "'"};
  }
  return s;
}

// --- .npz archives --------------------------------------------------------------------------------------

std::string member_of(const std::string& key) { return ends_with(key, ".npy") ? key : key + ".npy"; }

std::string list_keys(const ZipArchive& zip) {
  std::string out;
  for (const std::string& m : zip.members()) out += (out.empty() ? "" : ", ") + m.substr(0, m.size() - (ends_with(m, ".npy") ? 4 : 0));
  return out.empty() ? "none" : out;
}

SplitSource npz_split(const std::shared_ptr<ZipArchive>& zip, const std::string& xk, const std::string& yk) {
  for (const std::string& k : {xk, yk}) {
    MIRROR_CHECK(zip->has(member_of(k)), kFormat,
                 "'" << zip->path() << "' has no key '" << k << "'; it has: " << list_keys(*zip) << " (name them with --x/--y)");
  }
  auto opener = [zip](std::string member) -> ArrayOpener {
    return [zip, member] { return open_npy(zip->open(member)); };
  };
  return {opener(member_of(xk)), opener(member_of(yk)), {}, "'" + zip->path() + "' keys " + xk + "/" + yk};
}

// Keys of the training arrays: --x/--y, else x/y, else Keras' x_train/y_train.
std::pair<std::string, std::string> npz_train_keys(const ZipArchive& zip, const ImportOptions& o) {
  if (!o.x_name.empty() || !o.y_name.empty()) {
    MIRROR_CHECK(!o.x_name.empty() && !o.y_name.empty(), kInvalidArgument, "give both --x KEY and --y KEY, or neither");
    return {o.x_name, o.y_name};
  }
  if (zip.has("x.npy") && zip.has("y.npy")) return {"x", "y"};
  if (zip.has("x_train.npy") && zip.has("y_train.npy")) return {"x_train", "y_train"};
  MIRROR_THROW(kFormat, "'" << zip.path() << "' has neither keys x/y nor x_train/y_train; it has: " << list_keys(zip)
                            << " (name them with --x/--y)");
}

ImportSources npz_sources(const ImportOptions& o) {
  ImportSources s{"npz", {}, std::nullopt};
  auto zip = std::make_shared<ZipArchive>(o.source);
  const auto [xk, yk] = npz_train_keys(*zip, o);
  s.train = npz_split(zip, xk, yk);
  const std::string tx = o.test_x_name.empty() ? xk : o.test_x_name, ty = o.test_y_name.empty() ? yk : o.test_y_name;
  if (!o.test_source.empty()) {
    s.test = npz_split(std::make_shared<ZipArchive>(o.test_source), tx, ty);
  } else if (!o.test_x_name.empty() || !o.test_y_name.empty()) {
    s.test = npz_split(zip, tx, ty);
  } else if (xk == "x_train" && zip->has("x_test.npy") && zip->has("y_test.npy")) {
    MIRROR_CHECK(o.test_fraction == 0, kInvalidArgument,
                 "'" << o.source << "' has its own test set (x_test/y_test); drop --test-fraction to use it");
    s.test = npz_split(zip, "x_test", "y_test");
  }
  return s;
}

// --- HDF5 files -----------------------------------------------------------------------------------------

SplitSource h5_split(const std::string& file, const std::string& x, const std::string& y) {
  return {[file, x] { return open_h5_array(file, x); }, [file, y] { return open_h5_array(file, y); }, {},
          "'" + file + "' datasets " + x + " / " + y};
}

ImportSources h5_sources(const ImportOptions& o) {
  MIRROR_CHECK(!o.x_name.empty() && !o.y_name.empty(), kInvalidArgument,
               "an HDF5 import needs the dataset names: --x /PATH/TO/SAMPLES --y /PATH/TO/LABELS");
  ImportSources s{"hdf5", h5_split(o.source, o.x_name, o.y_name), std::nullopt};
  const std::string tx = o.test_x_name.empty() ? o.x_name : o.test_x_name;
  const std::string ty = o.test_y_name.empty() ? o.y_name : o.test_y_name;
  if (!o.test_source.empty()) {
    s.test = h5_split(o.test_source, tx, ty);
  } else if (!o.test_x_name.empty() || !o.test_y_name.empty()) {
    MIRROR_CHECK(!o.test_x_name.empty() && !o.test_y_name.empty(), kInvalidArgument,
                 "give both --test-x and --test-y for a test set inside '" << o.source << "'");
    s.test = h5_split(o.source, tx, ty);
  }
  return s;
}

// --- image folders --------------------------------------------------------------------------------------

SplitSource image_split(const std::string& root) {
  auto folder = scan_image_folder(root);
  return {[folder] { return open_image_pixels(folder); }, [folder] { return open_image_labels(folder); },
          folder->class_names, "image folder '" + root + "'"};
}

ImportSources image_sources(const ImportOptions& o) {
  MIRROR_CHECK(o.x_name.empty() && o.y_name.empty() && o.test_x_name.empty() && o.test_y_name.empty(), kInvalidArgument,
               "--x/--y/--test-x/--test-y do not apply to an image folder: its labels are its class sub-folders");
  MIRROR_CHECK(o.layout == SampleLayout::kChannelsFirst, kInvalidArgument,
               "--layout does not apply to an image folder: its samples are always stored channel-first (C, H, W)");
  MIRROR_CHECK(o.class_names.empty(), kInvalidArgument,
               "--class-names does not apply to an image folder: the class names are its sub-folder names");
  ImportSources s{"images", image_split(o.source), std::nullopt};
  if (!o.test_source.empty()) {
    s.test = image_split(o.test_source);
    MIRROR_CHECK(s.test->class_names == s.train.class_names, kFormat,
                 "the class folders of '" << o.test_source << "' differ from those of '" << o.source
                                          << "'; expected the same class sub-folders in both");
  }
  return s;
}

}  // namespace

ImportSources resolve_import_sources(const ImportOptions& o) {
  const std::string kind = kind_of(o.source, o.x_name);
  MIRROR_CHECK(kind == "npy" || o.test_source.empty() || kind_of(o.test_source, "") == kind, kInvalidArgument,
               "--test '" << o.test_source << "' is not of the same kind as SRC '" << o.source << "' (" << kind << ")");
  if (kind == "npy") return npy_sources(o);
  if (kind == "npz") return npz_sources(o);
  if (kind == "hdf5") return h5_sources(o);
  return image_sources(o);
}

}  // namespace mirror::data
