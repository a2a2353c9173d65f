// dnnl_cpu.cc — dnnl_cpu.h: one CPU engine and one in-order stream per process, made on first use.
#include "dnnl_cpu.h"

#include "mirror/error.h"

namespace mirror::nn::detail::dnnl_cpu {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

dnnl::memory::desc plain(const dims& d, tag t) { return dnnl::memory::desc(d, dnnl::memory::data_type::f32, t); }

tag tag_of(Layout layout) {
  switch (layout) {
    case Layout::kNChw8c: return tag::nChw8c;
    case Layout::kNChw16c: return tag::nChw16c;
    case Layout::kNchw: break;
  }
  return tag::nchw;
}

dnnl::memory wrap(const dnnl::memory::desc& md, const float* data) {
  return dnnl::memory(md, engine(), const_cast<float*>(data));  // oneDNN's handle is non-const; inputs stay read
}

Staged::Staged(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted)
    : plain_(plain), wanted_(wanted), copies_(plain != wanted) {
  if (!copies_) return;
  own_ = dnnl::memory(wanted, engine());
  to_wanted_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), wanted));
  to_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), wanted, engine(), plain));
}

dnnl::memory Staged::input(const float* data) {
  if (!copies_) return wrap(plain_, data);
  dnnl::memory user = wrap(plain_, data);
  to_wanted_.execute(stream(), user, own_);
  stream().wait();
  return own_;
}

dnnl::memory Staged::output(float* data) { return copies_ ? own_ : wrap(plain_, data); }

void Staged::finish_output(float* data) {
  if (!copies_) return;
  dnnl::memory user = wrap(plain_, data);
  to_plain_.execute(stream(), own_, user);
  stream().wait();
}

void run(std::string_view layer, const std::function<void()>& what) {
  try {
    what();
  } catch (const dnnl::error& e) {
    MIRROR_THROW(kInternal, layer << ": oneDNN status " << static_cast<int>(e.status) << ": " << e.what());
  }
}

void execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  p.execute(stream(), args);
  stream().wait();
}

}  // namespace mirror::nn::detail::dnnl_cpu
