// import_sources.h — which arrays an import reads (private): the kind of SRC told by its extension or by it
// being a folder, and the x/y arrays of the training and (when given) the test data inside it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "array_source.h"
#include "mirror/data/import.h"

namespace mirror::data {

struct SplitSource {
  ArrayOpener x, y;
  std::vector<std::string> class_names;  // an image folder's class sub-folders
  std::string origin;                    // for messages: "'mnist.npz' keys x_test/y_test"
};

struct ImportSources {
  std::string kind;                      // "npy" | "npz" | "hdf5" | "images"
  SplitSource train;
  std::optional<SplitSource> test;       // absent: split train by test_fraction
};

// Resolves and opens the sources (headers only). Throws kInvalidArgument for options that do not fit the
// kind (a missing --y, --x with a folder, ...), kIo/kFormat for inputs that cannot be read.
ImportSources resolve_import_sources(const ImportOptions& options);

}  // namespace mirror::data
