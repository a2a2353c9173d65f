// npy.cc — the .npy header parser (a small recursive-descent parser of the header's Python dict literal)
// and the block reader of its rows.
#include "npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <sstream>

#include "mirror/error.h"

namespace mirror::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMaxHeader = 1 << 20;  // numpy itself refuses headers over 10000 bytes by default

// One value of the header dict: a string, a boolean, a tuple of integers, or a list (structured dtype).
struct Value {
  enum Kind { kString, kBool, kTuple, kList } kind = kString;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

class DictParser {
 public:
  DictParser(const std::string& s, const std::string& name) : s_(s), name_(name) {}

  std::map<std::string, Value> parse() {
    std::map<std::string, Value> out;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      out[key] = value();
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_ws();
    MIRROR_CHECK(pos_ == s_.size(), kFormat, name_ << ": unexpected text after the header dict at byte " << pos_);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    MIRROR_THROW(kFormat, name_ << ": malformed .npy header (" << what << " at byte " << pos_ << " of '" << s_
                                << "'); expected a dict like {'descr': '<f4', 'fortran_order': False, 'shape': (N, 4), }");
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a quoted string");
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  int64_t integer() {
    skip_ws();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start || pos_ - start > 18) fail("expected a non-negative integer of at most 18 digits");
    const int64_t v = std::stoll(s_.substr(start, pos_ - start));
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2's long suffix
    return v;
  }
  Value value() {
    skip_ws();
    Value v;
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
      v.text = string_literal();
    } else if (s_.compare(pos_, 4, "True") == 0 || s_.compare(pos_, 5, "False") == 0) {
      v.kind = Value::kBool;
      v.flag = s_[pos_] == 'T';
      pos_ += v.flag ? 4 : 5;
    } else if (peek('(')) {
      v.kind = Value::kTuple;
      ++pos_;
      while (!peek(')')) {
        v.ints.push_back(integer());
        if (!peek(')')) expect(',');
      }
      ++pos_;
    } else if (peek('[')) {  // a structured dtype's field list: skip it, the caller refuses it
      v.kind = Value::kList;
      int depth = 0;
      do {
        if (s_[pos_] == '[') ++depth;
        if (s_[pos_] == ']') --depth;
        ++pos_;
      } while (depth > 0 && pos_ < s_.size());
      if (depth > 0) fail("unterminated list");
    } else {
      fail("expected a string, True/False, a tuple or a list");
    }
    return v;
  }

  const std::string& s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

// '<f8' -> kFloat64 (little-endian), etc. Refuses what is not a plain number, saying what it is.
void parse_descr(const std::string& d, const std::string& name, NpyHeader& h) {
  const std::string hint = "; expected a numeric array (bool, int8..int64, uint8..uint64, float16/32/64)";
  MIRROR_CHECK(d.size() >= 2, kFormat, name << ": dtype '" << d << "' is not understood" << hint);
  const char order = d[0];
  MIRROR_CHECK(order == '<' || order == '>' || order == '|' || order == '=', kFormat,
               name << ": dtype '" << d << "' has no byte order mark" << hint);
  const char kind = d[1];
  const std::string size_text = d.substr(2);
  MIRROR_CHECK(kind != 'O', kFormat,
               name << ": dtype 'object' (a ragged array of rows of different lengths, or pickled Python objects) "
                       "cannot be imported" << hint << " of one shape: pad or crop the rows to one length first");
  MIRROR_CHECK(kind != 'U' && kind != 'S' && kind != 'a', kFormat, name << ": dtype '" << d << "' holds strings" << hint);
  MIRROR_CHECK(kind != 'c', kFormat, name << ": dtype '" << d << "' holds complex numbers" << hint);
  MIRROR_CHECK(kind != 'M' && kind != 'm', kFormat, name << ": dtype '" << d << "' holds dates or times" << hint);
  const bool digits = !size_text.empty() && std::all_of(size_text.begin(), size_text.end(),
                                                         [](char c) { return c >= '0' && c <= '9'; });
  const int size = digits && size_text.size() <= 2 ? std::stoi(size_text) : -1;
  struct Known { char kind; int size; ElemType type; };
  static constexpr Known kKnown[] = {
      {'b', 1, ElemType::kBool},   {'i', 1, ElemType::kInt8},    {'u', 1, ElemType::kUInt8},
      {'i', 2, ElemType::kInt16},  {'u', 2, ElemType::kUInt16},  {'i', 4, ElemType::kInt32},
      {'u', 4, ElemType::kUInt32}, {'i', 8, ElemType::kInt64},   {'u', 8, ElemType::kUInt64},
      {'f', 2, ElemType::kFloat16}, {'f', 4, ElemType::kFloat32}, {'f', 8, ElemType::kFloat64}};
  for (const Known& k : kKnown) {
    if (k.kind == kind && k.size == size) {
      h.type = k.type;
      h.byte_swap = order == '>' && size > 1;
      return;
    }
  }
  MIRROR_THROW(kFormat, name << ": dtype '" << d << "' is not supported" << hint);
}

}  // namespace

NpyHeader parse_npy_dict(const std::string& dict, const std::string& name) {
  const auto fields = DictParser(dict, name).parse();
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    MIRROR_CHECK(fields.count(key), kFormat, name << ": the .npy header has no '" << key << "' entry");
  }
  NpyHeader h;
  const Value& descr = fields.at("descr");
  MIRROR_CHECK(descr.kind == Value::kString, kFormat,
               name << ": the array has a structured dtype (named fields); expected a plain numeric array");
  parse_descr(descr.text, name, h);
  const Value& order = fields.at("fortran_order");
  MIRROR_CHECK(order.kind == Value::kBool, kFormat, name << ": 'fortran_order' is not True or False");
  h.fortran_order = order.flag;
  MIRROR_CHECK(!h.fortran_order, kFormat,
               name << ": the array is stored in Fortran (column-major) order; save np.ascontiguousarray(a) instead");
  const Value& shape = fields.at("shape");
  MIRROR_CHECK(shape.kind == Value::kTuple, kFormat, name << ": 'shape' is not a tuple of integers");
  MIRROR_CHECK(!shape.ints.empty(), kFormat, name << ": the array is a scalar (shape ()); expected one row per sample");
  h.shape = shape.ints;
  return h;
}

NpyHeader read_npy_header(ByteStream& in) {
  const std::string& name = in.name();
  unsigned char pre[10];
  MIRROR_CHECK(in.read(pre, 8) == 8 && std::memcmp(pre, kMagic, 6) == 0, kFormat,
               name << " is not a .npy file (it does not start with \\x93NUMPY); expected an array saved by np.save");
  const int major = pre[6];
  MIRROR_CHECK(major >= 1 && major <= 3, kFormat, name << ": .npy format version " << major << "." << int(pre[7])
                                                       << " is not supported; expected 1.0, 2.0 or 3.0");
  uint64_t len = 0;
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  MIRROR_CHECK(in.read(pre, len_bytes) == len_bytes, kFormat, name << ": the .npy file ends inside its header");
  for (std::size_t i = 0; i < len_bytes; ++i) len |= static_cast<uint64_t>(pre[i]) << (8 * i);
  MIRROR_CHECK(len <= kMaxHeader, kFormat, name << ": the .npy header claims " << len << " bytes; expected at most " << kMaxHeader);
  std::string dict(len, '\0');
  MIRROR_CHECK(in.read(dict.data(), len) == len, kFormat, name << ": the .npy file ends inside its header");
  NpyHeader h = parse_npy_dict(dict, name);
  h.header_bytes = 8 + len_bytes + len;
  // The data must be exactly prod(shape) * itemsize bytes (computed without overflow).
  long double want = static_cast<long double>(elem_size(h.type));
  std::ostringstream shape;
  for (std::size_t i = 0; i < h.shape.size(); ++i) {
    want *= static_cast<long double>(h.shape[i]);
    shape << (i ? ", " : "") << h.shape[i];
  }
  const long double have = static_cast<long double>(in.size()) - static_cast<long double>(h.header_bytes);
  MIRROR_CHECK(have >= want, kFormat, name << " is truncated: its header says shape (" << shape.str() << ") of "
                                           << elem_name(h.type) << ", " << static_cast<double>(want) << " bytes of data, but only "
                                           << static_cast<double>(have) << " bytes follow the header");
  MIRROR_CHECK(have == want, kFormat, name << " has " << static_cast<double>(have - want)
                                           << " bytes after the data its header describes (shape (" << shape.str()
                                           << ")); expected the file to end there");
  return h;
}

namespace {

class NpySource : public ArraySource {
 public:
  explicit NpySource(std::unique_ptr<ByteStream> in) : in_(std::move(in)), header_(read_npy_header(*in_)) {}
  const std::vector<int64_t>& shape() const override { return header_.shape; }
  ElemType type() const override { return header_.type; }
  const std::string& name() const override { return in_->name(); }
  void read(int64_t rows, void* out) override {
    const std::size_t esize = elem_size(header_.type);
    const std::size_t bytes = static_cast<std::size_t>(rows * row_elems()) * esize;
    MIRROR_CHECK(rows >= 0 && next_ + rows <= header_.shape[0], kInternal, "read past the last row of " << name());
    MIRROR_CHECK(in_->read(out, bytes) == bytes, kFormat, name() << " ended before its last row (truncated?)");
    next_ += rows;
    if (next_ == header_.shape[0]) {
      // Read on to the end: a zip member's CRC-32 is checked only when its end is reached.
      char extra;
      MIRROR_CHECK(in_->read(&extra, 1) == 0, kFormat, name() << " holds more bytes than its header describes");
    }
    if (header_.byte_swap) {
      auto* p = static_cast<unsigned char*>(out);
      for (std::size_t i = 0; i < bytes; i += esize) std::reverse(p + i, p + i + esize);
    }
  }

 private:
  std::unique_ptr<ByteStream> in_;
  NpyHeader header_;
  int64_t next_ = 0;  // rows read so far
};

}  // namespace

std::unique_ptr<ArraySource> open_npy(std::unique_ptr<ByteStream> in) { return std::make_unique<NpySource>(std::move(in)); }

}  // namespace mirror::data
