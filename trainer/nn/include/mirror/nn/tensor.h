// mirror/nn/tensor.h — typed tensors of any rank on a device: an RAII byte buffer (host or CUDA memory) that
// only grows, and Tensor = shape + dtype (float32, bfloat16 or int32) + data that either owns such a buffer or
// views memory owned elsewhere (e.g. a parameter inside the model's flat buffer). Element access is typed and
// checked: asking a tensor for another dtype than it holds is an error that names both. Copies to and from the
// host are explicit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mirror/nn/device.h"

namespace mirror::nn {

using Shape = std::vector<std::int64_t>;

// The element types a tensor may hold. bfloat16 is stored as its 16 bits (the top half of a float32).
enum class DType { kFloat32, kBFloat16, kInt32 };
struct BFloat16 {
  std::uint16_t bits;
};
std::size_t dtype_size(DType dtype);
// "float32", "bfloat16", "int32".
const char* to_string(DType dtype);
// The DType of a C++ element type (float, BFloat16, std::int32_t).
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <>
constexpr DType dtype_of<BFloat16>() { return DType::kBFloat16; }
template <>
constexpr DType dtype_of<std::int32_t>() { return DType::kInt32; }

// How a 4-D [N, C, H, W] tensor lies in memory. kNchw: row-major (PyTorch's layout; every tensor at a model's
// edges, in checkpoints and on CUDA). kNChw8c / kNChw16c: oneDNN's channel-blocked layouts on the CPU (what its
// AVX2 / AVX-512 convolution kernels want), element (n, c, h, w) at ((n·C/b + c/b)·H·W + h·W + w)·b + c mod b
// with b = 8 or 16, C a multiple of b; consecutive CNN layers hand them on without reorders (docs/compute.md).
enum class Layout { kNchw, kNChw8c, kNChw16c };
// b of a blocked layout, 1 for kNchw.
std::int64_t channel_block(Layout layout);
// "nchw", "nChw8c", "nChw16c".
const char* to_string(Layout layout);

// Product of the dimensions (1 for an empty shape); throws kInvalidArgument on a negative dimension.
std::int64_t shape_numel(const Shape& shape);
// "[64, 784]".
std::string to_string(const Shape& shape);

// Raw memory on a device; CPU memory is 64-byte aligned. Move-only; the destructor never throws.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Makes room for at least `bytes`; reallocates (contents lost) only when the capacity is smaller.
  void reserve(std::size_t bytes);
  void* data() const { return data_; }
  std::size_t capacity() const { return capacity_; }
  const Device& device() const { return device_; }

 private:
  void release() noexcept;
  Device device_;
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// Byte copies between host memory and a device's memory (plain memcpy on the CPU). Synchronous.
void copy_host_to_device(const Device& device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_host(const Device& device, void* dst, const void* src, std::size_t bytes);
void copy_device_to_device(const Device& device, void* dst, const void* src, std::size_t bytes);
// `rows` rows of `row_bytes` bytes each, row r from src + r·src_pitch to dst + r·dst_pitch (pitches in bytes;
// a concatenation's slabs). Synchronous on the CPU; queued on the legacy default stream on CUDA.
void copy_rows_device_to_device(const Device& device, void* dst, std::size_t dst_pitch, const void* src,
                                std::size_t src_pitch, std::size_t row_bytes, std::size_t rows);

class Tensor {
 public:
  Tensor() = default;
  // Owning, uninitialised.
  Tensor(Shape shape, Device device, DType dtype = DType::kFloat32);
  // Non-owning view of `data` (memory of `device`), valid while that memory lives.
  static Tensor view(float* data, Shape shape, Device device);
  // The same for elements of `dtype`.
  static Tensor view(void* data, Shape shape, Device device, DType dtype);

  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Changes the shape of an owning tensor, reallocating only when it needs more room than it ever had
  // (so a training loop allocates on its first step only). Contents are unspecified afterwards; the layout is
  // kNchw again; the dtype stays.
  void resize(const Shape& shape);
  // Declares how the data lies (tensor.h's Layout); a blocked layout needs a 4-D CPU tensor whose channels are a
  // multiple of the block, else kInvalidArgument.
  void set_layout(Layout layout);
  Layout layout() const { return layout_; }
  bool blocked() const { return layout_ != Layout::kNchw; }

  DType dtype() const { return dtype_; }
  // The elements as float32; kInvalidArgument naming the dtype held when it is another.
  float* data() { return as<float>(); }
  const float* data() const { return as<float>(); }
  // The elements as T (float, BFloat16, std::int32_t); kInvalidArgument naming both dtypes when T is not held.
  template <class T>
  T* as() {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* as() const {
    check_dtype(dtype_of<T>());
    return static_cast<const T*>(data_);
  }
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
  // kInvalidArgument "... holds int32 values where float32 is needed" unless the tensor holds `dtype`.
  void check_dtype(DType dtype) const {
    if (dtype != dtype_) throw_dtype_mismatch(dtype);
  }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::int64_t numel() const { return numel_; }
  const Device& device() const { return device_; }
  bool is_view() const { return view_; }

  // Host copies; the host side must have exactly numel() elements of the tensor's dtype (else kInvalidArgument).
  void copy_from_host(std::span<const float> host);
  void copy_from_host(std::span<const std::int32_t> host);
  void copy_to_host(std::span<float> host) const;
  std::vector<float> to_host() const;
  std::vector<std::int32_t> to_host_int32() const;

 private:
  [[noreturn]] void throw_dtype_mismatch(DType wanted) const;
  void copy_in(const void* host, std::size_t count, DType dtype);
  void copy_out(void* host, std::size_t count, DType dtype) const;

  DeviceBuffer buffer_;
  void* data_ = nullptr;
  Shape shape_;
  std::int64_t numel_ = 0;
  Device device_;
  DType dtype_ = DType::kFloat32;
  bool view_ = false;
  Layout layout_ = Layout::kNchw;
};

}  // namespace mirror::nn
