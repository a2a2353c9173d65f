// test_util.cc — temporary directories, the id dataset and HDF5 edits for the data tests.
#include "test_util.h"

#include <hdf5.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace mirror::data::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mirror-data-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> write_id_dataset(const std::string& path, const IdSpec& spec) {
  DatasetHeader h;
  h.num_classes = spec.classes;
  h.sample_shape = spec.shape.empty() ? std::vector<int64_t>{spec.features} : spec.shape;
  h.x_dtype = spec.dtype;
  h.scaling = spec.scaling;
  WriteOptions w;
  w.shards = spec.shards;
  w.chunk_samples = spec.chunk_samples;
  DatasetWriter writer(path, h, spec.train, spec.test, w);
  int split = 0;
  for (const auto& [name, n] : {std::pair<const char*, int64_t>{"train", spec.train}, {"test", spec.test}}) {
    // Appended in uneven pieces so that pieces straddle shard boundaries.
    for (int64_t first = 0; first < n;) {
      const int64_t count = std::min<int64_t>(n - first, 13);
      std::vector<float> xf;
      std::vector<uint8_t> xb;
      std::vector<int32_t> y;
      for (int64_t i = first; i < first + count; ++i) {
        y.push_back(label_of(i, spec.classes));
        for (int64_t f = 0; f < spec.features; ++f) {
          xf.push_back(float_value(i, f, split));
          xb.push_back(byte_value(i, f, split));
        }
      }
      writer.append(name, spec.dtype == DType::kFloat32 ? static_cast<const void*>(xf.data()) : xb.data(), y.data(),
                    count);
      first += count;
    }
    ++split;
  }
  writer.close();
  return writer.files();
}

namespace {

hid_t open_rw(const std::string& file) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("cannot open " + file + " read-write");
  return f;
}

}  // namespace

void delete_link(const std::string& file, const std::string& path) {
  hid_t f = open_rw(file);
  H5Ldelete(f, path.c_str(), H5P_DEFAULT);
  H5Fclose(f);
}

void replace_dataset(const std::string& file, const std::string& path, hid_t type, const std::vector<int64_t>& dims) {
  hid_t f = open_rw(file);
  if (H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, path.c_str(), H5P_DEFAULT);
  std::vector<hsize_t> d(dims.begin(), dims.end());
  hid_t space = H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr);
  hid_t ds = H5Dcreate2(f, path.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("cannot create " + path);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(f);
}

void set_int_attr(const std::string& file, const std::string& name, const std::vector<int64_t>& values) {
  hid_t f = open_rw(file);
  if (H5Aexists(f, name.c_str()) > 0) H5Adelete(f, name.c_str());
  const hsize_t n = values.size();
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t a = H5Acreate2(f, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, values.data());
  H5Aclose(a);
  H5Sclose(space);
  H5Fclose(f);
}

void delete_attr(const std::string& file, const std::string& name) {
  hid_t f = open_rw(file);
  H5Adelete(f, name.c_str());
  H5Fclose(f);
}

void poke_label(const std::string& file, const std::string& path, int64_t i, int32_t value) {
  hid_t f = open_rw(file);
  hid_t ds = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  hid_t fs = H5Dget_space(ds);
  const hsize_t start = static_cast<hsize_t>(i), one = 1;
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &one, nullptr);
  hid_t ms = H5Screate_simple(1, &one, nullptr);
  H5Dwrite(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, &value);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(ds);
  H5Fclose(f);
}

void poke_value(const std::string& file, const std::string& path, int64_t row, int64_t feature, float value) {
  hid_t f = open_rw(file);
  hid_t ds = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  hid_t fs = H5Dget_space(ds);
  const hsize_t start[2] = {static_cast<hsize_t>(row), static_cast<hsize_t>(feature)}, one[2] = {1, 1};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, one, nullptr);
  hid_t ms = H5Screate_simple(2, one, nullptr);
  H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, &value);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(ds);
  H5Fclose(f);
}

}  // namespace mirror::data::test
