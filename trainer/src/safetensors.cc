// safetensors.cc — mirror/train/safetensors.h: the header parsed and checked as a whole (duplicate names found
// by a parser callback, since a JSON object keeps only the last of them), then each tensor read at its offset
// and widened to float32 (F16 and BF16 with mirror/coll/half.h's exact conversions).
#include "mirror/train/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>

#include "atomic_file.h"
#include "mirror/coll/half.h"
#include "mirror/error.h"

namespace mirror::train {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is this reader");

constexpr const char* kMetadataKey = "__metadata__";
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;   // as the reference implementation
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 40;

// One tensor's entry in the header, checked for its own fields.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
  std::uint64_t numel = 1;
};

std::size_t dtype_bytes(const std::string& path, const Entry& e) {
  if (e.dtype == "F32") return 4;
  if (e.dtype == "F16" || e.dtype == "BF16") return 2;
  MIRROR_THROW(kFormat, path << ": tensor '" << e.name << "' has dtype '" << e.dtype
                             << "', which this reader does not take (F32, F16 and BF16)");
}

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& j) {
  const std::string where = path + ": tensor '" + name + "'";
  MIRROR_CHECK(j.is_object() && j.contains("dtype") && j.contains("shape") && j.contains("data_offsets"), kFormat,
               where << " is not an object with dtype, shape and data_offsets: " << j.dump().substr(0, 200));
  Entry e;
  e.name = name;
  MIRROR_CHECK(j["dtype"].is_string(), kFormat, where << ": dtype is not a string");
  e.dtype = j["dtype"].get<std::string>();
  const nlohmann::json& shape = j["shape"];
  MIRROR_CHECK(shape.is_array() && shape.size() <= 8, kFormat, where << ": shape is not an array of 0 to 8 sizes");
  for (const auto& d : shape) {
    MIRROR_CHECK(d.is_number_unsigned() && d.get<std::uint64_t>() <= kMaxElements, kFormat,
                 where << ": shape " << shape.dump() << " holds something other than a size in [0, 2^40]");
    const std::uint64_t n = d.get<std::uint64_t>();
    MIRROR_CHECK(n == 0 || e.numel <= kMaxElements / n, kFormat, where << ": shape " << shape.dump()
                                                                       << " has more than 2^40 elements");
    e.numel *= n;
    e.shape.push_back(static_cast<std::int64_t>(n));
  }
  const nlohmann::json& offsets = j["data_offsets"];
  MIRROR_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                   offsets[1].is_number_unsigned(),
               kFormat, where << ": data_offsets " << offsets.dump() << " is not [begin, end] of two byte offsets");
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  MIRROR_CHECK(e.begin <= e.end, kFormat, where << ": data_offsets [" << e.begin << ", " << e.end << "] end before they begin");
  const std::uint64_t bytes = e.numel * dtype_bytes(path, e);
  MIRROR_CHECK(e.end - e.begin == bytes, kFormat,
               where << ": data_offsets [" << e.begin << ", " << e.end << "] span " << e.end - e.begin << " bytes, but shape "
                     << shape.dump() << " of " << e.dtype << " takes " << bytes);
  return e;
}

// The header's JSON object; duplicate names are refused (nlohmann keeps only the last of them).
nlohmann::json parse_header(const std::string& path, const std::string& text) {
  std::string duplicate;
  std::set<std::string> seen;
  const nlohmann::json::parser_callback_t callback = [&](int depth, nlohmann::json::parse_event_t event,
                                                         nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && duplicate.empty() &&
        !seen.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json header = nlohmann::json::parse(text, callback, /*allow_exceptions=*/false);
  MIRROR_CHECK(!header.is_discarded() && header.is_object(), kFormat,
               path << ": the header (" << text.size() << " bytes after the 8-byte length) is not a JSON object; "
                    << "not a safetensors file, or a damaged one");
  MIRROR_CHECK(duplicate.empty(), kFormat, path << ": the header names tensor '" << duplicate << "' more than once");
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const nlohmann::json& j) {
  MIRROR_CHECK(j.is_object(), kFormat, path << ": __metadata__ is not an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    MIRROR_CHECK(value.is_string(), kFormat, path << ": __metadata__ '" << key << "' is not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// The entries sorted by offset must cover [0, data_bytes) exactly: in order, no overlap, no gap, nothing past it.
void check_coverage(const std::string& path, std::vector<Entry>& entries, std::uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    MIRROR_CHECK(e.end <= data_bytes, kFormat, path << ": tensor '" << e.name << "' (bytes [" << e.begin << ", " << e.end
                                                    << ")) lies past the end of the data (" << data_bytes
                                                    << " bytes); the file is truncated or its offsets are wrong");
    MIRROR_CHECK(e.begin >= at, kFormat, path << ": tensor '" << e.name << "' (bytes [" << e.begin << ", " << e.end
                                              << ")) overlaps tensor '" << previous->name << "' (ending at " << at << ")");
    MIRROR_CHECK(e.begin == at, kFormat, path << ": a gap of bytes [" << at << ", " << e.begin << ") before tensor '"
                                              << e.name << "'; safetensors data must be covered exactly");
    at = e.end;
    previous = &e;
  }
  MIRROR_CHECK(at == data_bytes, kFormat, path << ": the tensors cover " << at << " of the " << data_bytes
                                               << " data bytes; safetensors data must be covered exactly");
}

NamedTensor read_tensor(std::ifstream& in, const std::string& path, std::uint64_t data_start, const Entry& e) {
  NamedTensor t{e.name, e.shape, std::vector<float>(static_cast<std::size_t>(e.numel))};
  in.seekg(static_cast<std::streamoff>(data_start + e.begin));
  if (e.dtype == "F32") {
    in.read(reinterpret_cast<char*>(t.values.data()), static_cast<std::streamsize>(e.end - e.begin));
  } else {
    std::vector<std::uint16_t> raw(static_cast<std::size_t>(e.numel));
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(e.end - e.begin));
    if (e.dtype == "F16") coll::half_to_float(raw.data(), t.values.data(), raw.size());
    else coll::bfloat16_to_float(raw.data(), t.values.data(), raw.size());
  }
  MIRROR_CHECK(in.good(), kIo, path << ": reading tensor '" << e.name << "' failed");
  return t;
}

std::uint64_t read_header_length(std::ifstream& in, const std::string& path, std::uint64_t file_bytes) {
  MIRROR_CHECK(file_bytes >= 8, kFormat, path << " is " << file_bytes
                                              << " bytes, shorter than the 8-byte header length of a safetensors file");
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  MIRROR_CHECK(in.good(), kIo, path << ": cannot read the header length");
  MIRROR_CHECK(n <= file_bytes - 8 && n <= kMaxHeaderBytes, kFormat,
               path << ": the header length " << n << " reaches past the end of the file (" << file_bytes
                    << " bytes) or past " << kMaxHeaderBytes << " bytes; the file is truncated or not safetensors");
  return n;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::uint64_t at = 0;
  for (const NamedTensor& t : tensors) {
    std::uint64_t numel = 1;
    for (std::int64_t d : t.shape) numel *= static_cast<std::uint64_t>(d);
    MIRROR_CHECK(!t.name.empty() && t.name != kMetadataKey && !header.contains(t.name), kInvalidArgument,
                 "safetensors " << path << ": tensor name '" << t.name << "' is empty, reserved or given twice");
    MIRROR_CHECK(numel == t.values.size(), kInvalidArgument,
                 "safetensors " << path << ": tensor '" << t.name << "' has " << t.values.size()
                                << " values for a shape of " << numel);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + 4 * numel}}};
    at += 4 * numel;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  write_file_atomically(path, [&](std::ostream& out) {
    const std::uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const NamedTensor& t : tensors)
      out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(4 * t.values.size()));
  });
}

SafetensorsContent read_safetensors(const std::string& path) {
  std::error_code ec;
  const std::uint64_t file_bytes = std::filesystem::file_size(path, ec);
  MIRROR_CHECK(!ec && std::filesystem::is_regular_file(path), kIo,
               "safetensors file " << path << " does not exist or is not a regular file");
  std::ifstream in(path, std::ios::binary);
  MIRROR_CHECK(in.is_open(), kIo, "cannot open " << path);
  const std::uint64_t header_bytes = read_header_length(in, path, file_bytes);
  std::string text(static_cast<std::size_t>(header_bytes), '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_bytes));
  MIRROR_CHECK(in.good(), kIo, path << ": cannot read the header");
  const nlohmann::json header = parse_header(path, text);
  SafetensorsContent content;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) content.metadata = parse_metadata(path, value);
    else entries.push_back(parse_entry(path, name, value));
  }
  check_coverage(path, entries, file_bytes - 8 - header_bytes);
  for (const Entry& e : entries) content.tensors.push_back(read_tensor(in, path, 8 + header_bytes, e));
  return content;
}

}  // namespace mirror::train
