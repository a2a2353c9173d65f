// tensor.cc — mirror/nn/tensor.h: device memory (aligned host memory or cudaMalloc), copies, Tensor.
#include "mirror/nn/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <utility>

#include "backend.h"
#include "mirror/error.h"

namespace mirror::nn {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    MIRROR_CHECK(d >= 0, kInvalidArgument, "shape " << to_string(shape) << " has a negative dimension");
    n *= d;
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

DeviceBuffer::DeviceBuffer(Device device, std::size_t bytes) : device_(device) { reserve(bytes); }

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_), data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return;
  release();
  if (device_.is_cpu()) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded);
    MIRROR_CHECK(data_ != nullptr, kInvalidArgument, "out of host memory allocating " << bytes << " bytes");
  } else {
#if MIRROR_HAVE_CUDA
    data_ = detail::cuda::allocate(bytes);
#else
    detail::require_cpu(device_);
#endif
  }
  capacity_ = bytes;
}

void DeviceBuffer::release() noexcept {
  if (!data_) return;
  if (device_.is_cpu()) {
    std::free(data_);
  } else {
#if MIRROR_HAVE_CUDA
    detail::cuda::release(data_);
#endif
  }
  data_ = nullptr;
  capacity_ = 0;
}

void copy_host_to_device(const Device& device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if MIRROR_HAVE_CUDA
  detail::cuda::copy_h2d(dst, src, bytes);
#else
  detail::require_cpu(device);
#endif
}

void copy_device_to_host(const Device& device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if MIRROR_HAVE_CUDA
  detail::cuda::copy_d2h(dst, src, bytes);
#else
  detail::require_cpu(device);
#endif
}

void copy_device_to_device(const Device& device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (device.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
#if MIRROR_HAVE_CUDA
  detail::cuda::copy_d2d(dst, src, bytes);
#else
  detail::require_cpu(device);
#endif
}

void copy_rows_device_to_device(const Device& device, void* dst, std::size_t dst_pitch, const void* src,
                                std::size_t src_pitch, std::size_t row_bytes, std::size_t rows) {
  if (row_bytes == 0 || rows == 0) return;
  if (device.is_cpu()) {
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, row_bytes);
    return;
  }
#if MIRROR_HAVE_CUDA
  detail::cuda::copy_d2d_rows(dst, dst_pitch, src, src_pitch, row_bytes, rows);
#else
  detail::require_cpu(device);
#endif
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return 2;
    case DType::kFloat32:
    case DType::kInt32: break;
  }
  return 4;
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kFloat32: break;
  }
  return "float32";
}

Tensor::Tensor(Shape shape, Device device, DType dtype) : buffer_(device, 0), device_(device), dtype_(dtype) {
  resize(shape);
}

Tensor Tensor::view(float* data, Shape shape, Device device) {
  return view(static_cast<void*>(data), std::move(shape), device, DType::kFloat32);
}

Tensor Tensor::view(void* data, Shape shape, Device device, DType dtype) {
  Tensor t;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.device_ = device;
  t.dtype_ = dtype;
  t.view_ = true;
  return t;
}

void Tensor::throw_dtype_mismatch(DType wanted) const {
  MIRROR_THROW(kInvalidArgument, "a tensor of shape " << to_string(shape_) << " holds " << to_string(dtype_)
                                                      << " values where " << to_string(wanted) << " is needed");
}

void Tensor::resize(const Shape& shape) {
  MIRROR_CHECK(!view_, kInvalidArgument, "cannot resize a tensor view (shape " << to_string(shape_) << ")");
  const std::int64_t n = shape_numel(shape);
  if (buffer_.device() != device_) buffer_ = DeviceBuffer(device_, 0);
  buffer_.reserve(static_cast<std::size_t>(n) * dtype_size(dtype_));
  data_ = buffer_.data();
  shape_ = shape;
  numel_ = n;
  layout_ = Layout::kNchw;
}

std::int64_t channel_block(Layout layout) {
  switch (layout) {
    case Layout::kNChw8c: return 8;
    case Layout::kNChw16c: return 16;
    case Layout::kNchw: break;
  }
  return 1;
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::kNChw8c: return "nChw8c";
    case Layout::kNChw16c: return "nChw16c";
    case Layout::kNchw: break;
  }
  return "nchw";
}

void Tensor::set_layout(Layout layout) {
  const std::int64_t b = channel_block(layout);
  MIRROR_CHECK(b == 1 || (device_.is_cpu() && shape_.size() == 4 && shape_[1] % b == 0), kInvalidArgument,
               "layout " << to_string(layout) << " needs a 4-D CPU tensor with channels a multiple of " << b
                         << ", got " << to_string(shape_) << " on " << to_string(device_));
  layout_ = layout;
}

void Tensor::copy_in(const void* host, std::size_t count, DType dtype) {
  check_dtype(dtype);
  MIRROR_CHECK(static_cast<std::int64_t>(count) == numel_, kInvalidArgument,
               "copy to tensor of shape " << to_string(shape_) << " needs " << numel_ << " values, got " << count);
  copy_host_to_device(device_, data_, host, bytes());
}

void Tensor::copy_out(void* host, std::size_t count, DType dtype) const {
  check_dtype(dtype);
  MIRROR_CHECK(static_cast<std::int64_t>(count) == numel_, kInvalidArgument,
               "copy from tensor of shape " << to_string(shape_) << " needs room for " << numel_ << " values, got "
                                            << count);
  copy_device_to_host(device_, host, data_, bytes());
}

void Tensor::copy_from_host(std::span<const float> host) { copy_in(host.data(), host.size(), DType::kFloat32); }

void Tensor::copy_from_host(std::span<const std::int32_t> host) { copy_in(host.data(), host.size(), DType::kInt32); }

void Tensor::copy_to_host(std::span<float> host) const { copy_out(host.data(), host.size(), DType::kFloat32); }

std::vector<float> Tensor::to_host() const {
  std::vector<float> out(static_cast<std::size_t>(numel_));
  copy_to_host(out);
  return out;
}

std::vector<std::int32_t> Tensor::to_host_int32() const {
  std::vector<std::int32_t> out(static_cast<std::size_t>(numel_));
  copy_out(out.data(), out.size(), DType::kInt32);
  return out;
}

}  // namespace mirror::nn
