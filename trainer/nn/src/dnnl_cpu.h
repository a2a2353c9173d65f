// dnnl_cpu.h (private) — the one place the CPU layers meet oneDNN: the process's CPU engine and stream, plain
// NCHW / OIHW memory descriptors over Mirror's own buffers (no copies), and a wrapper that turns oneDNN's
// exceptions into mirror::Error naming the layer. Every oneDNN primitive runs here synchronously: execute,
// then stream.wait(), so a layer's outputs are final when it returns (as ops on the CPU are).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "mirror/nn/tensor.h"

namespace mirror::nn::detail::dnnl_cpu {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

dnnl::engine& engine();
dnnl::stream& stream();

// f32 descriptor of a plain (row-major) tensor with these dims and format (nchw, oihw, x, nc, ...).
dnnl::memory::desc plain(const dims& d, tag t);
// oneDNN's tag of a Mirror layout (tensor.h): nchw, nChw8c, nChw16c.
tag tag_of(Layout layout);
// A oneDNN memory object over memory Mirror owns (no copy; `data` must outlive its use).
dnnl::memory wrap(const dnnl::memory::desc& md, const float* data);

// A tensor in the layout a primitive wants: Mirror's own plain buffer when the layouts agree (no copy), else a
// oneDNN-owned buffer in the wanted (blocked) layout, filled or emptied by a reorder.
class Staged {
 public:
  Staged() = default;
  Staged(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted);
  bool copies() const { return copies_; }
  // `data` (plain) in the wanted layout: reordered into the own buffer when the layouts differ.
  dnnl::memory input(const float* data);
  // Where a primitive writes its result; finish_output(data) then leaves it in `data` (plain).
  dnnl::memory output(float* data);
  void finish_output(float* data);
  // The own buffer as last filled (valid when copies()).
  const dnnl::memory& staged() const { return own_; }

 private:
  dnnl::memory::desc plain_, wanted_;
  dnnl::memory own_;
  dnnl::reorder to_wanted_, to_plain_;  // built once; run over any buffer of these layouts
  bool copies_ = false;
};

// Runs `what` and rethrows a dnnl::error as mirror::Error(kInternal) "<layer>: oneDNN <status>: <message>".
void run(std::string_view layer, const std::function<void()>& what);

// Executes a primitive with its arguments and waits for it.
void execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args);

}  // namespace mirror::nn::detail::dnnl_cpu
