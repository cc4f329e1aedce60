// Safetensors.cpp: validation first (sizes, offsets, overlaps, dtypes), then copying.
#include "tensor/Safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>

#include "tensor/FileIO.h"
#include "tensor/Json.h"

namespace tensor {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian port must byte-swap here");

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;  // the reference implementation's limit

const char* st_name(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Float16: return "F16";
    case DType::BFloat16: return "BF16";
    case DType::Int64: return "I64";
    case DType::UInt8: return "U8";
  }
  return "?";
}

DType st_dtype(const std::string& s, const std::string& where) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::UInt8}) {
    if (s == st_name(t)) return t;
  }
  throw Error(where + ": unsupported dtype '" + s + "' (supported: F32, F64, F16, BF16, I64, U8)");
}

}  // namespace

SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& what) {
  TENSOR_CHECK(size >= 8, what, ": not a safetensors file: ", size, " bytes, need at least 8");
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);
  TENSOR_CHECK(header_len <= kMaxHeader, what, ": header length ", header_len, " exceeds the ",
               kMaxHeader, "-byte limit (not a safetensors file?)");
  TENSOR_CHECK(header_len <= size - 8, what, ": truncated: header says ", header_len,
               " bytes but only ", size - 8, " follow");
  const std::string_view text(reinterpret_cast<const char*>(data + 8), header_len);
  const Json header = Json::parse(text, what + " header");
  TENSOR_CHECK(header.is_object(), what, ": header is not a JSON object");
  const uint8_t* payload = data + 8 + header_len;
  const uint64_t payload_size = size - 8 - header_len;

  // Note [Validate, then allocate]: every entry is checked (dtype, shape, offsets, sizes)
  // and the ranges are checked for overlaps before the first tensor is allocated, so a
  // header cannot make the reader allocate more than the data section holds.
  struct Entry {
    const std::string* name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  SafetensorsFile file;
  std::vector<Entry> entries;
  std::set<std::string_view> names;
  for (const auto& [name, entry] : header.as_object()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.as_object(what + ": __metadata__")) {
        file.metadata[k] = v.as_string(what + ": __metadata__." + k);
      }
      continue;
    }
    const std::string where = what + ": tensor '" + name + "'";
    TENSOR_CHECK(names.insert(name).second, where, " appears twice");
    const DType dtype = st_dtype(entry.at("dtype", where).as_string(where + " dtype"), where);
    Shape shape;
    for (const Json& d : entry.at("shape", where).as_array(where + " shape")) {
      shape.push_back(d.as_int(where + " shape entry"));
    }
    const uint64_t nbytes = shape_nbytes(shape, dtype, where.c_str());  // sizes >= 0, no overflow
    const auto& offsets = entry.at("data_offsets", where).as_array(where + " data_offsets");
    TENSOR_CHECK(offsets.size() == 2, where, ": data_offsets must have 2 entries, has ", offsets.size());
    const int64_t begin = offsets[0].as_int(where + " data_offsets[0]");
    const int64_t end = offsets[1].as_int(where + " data_offsets[1]");
    TENSOR_CHECK(begin >= 0 && begin <= end, where, ": bad data_offsets [", begin, ", ", end, "]");
    TENSOR_CHECK(static_cast<uint64_t>(end) <= payload_size, where, ": data_offsets [", begin, ", ",
                 end, "] run past the end of the data (", payload_size, " bytes; truncated file?)");
    TENSOR_CHECK(nbytes == static_cast<uint64_t>(end - begin), where, ": ", shape_str(shape), " of ",
                 st_name(dtype), " needs ", nbytes, " bytes but data_offsets span ", end - begin);
    entries.push_back({&name, dtype, std::move(shape), static_cast<uint64_t>(begin), static_cast<uint64_t>(end)});
  }
  // Overlaps: sorted by start, each non-empty range must begin at or after the furthest end
  // of all the ranges before it (not just its neighbour's: an empty range between two
  // overlapping ones must not hide them).
  std::vector<const Entry*> order;
  for (const Entry& e : entries) {
    if (e.end > e.begin) order.push_back(&e);
  }
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  const Entry* furthest = nullptr;
  for (const Entry* e : order) {
    TENSOR_CHECK(!furthest || e->begin >= furthest->end, what, ": tensors '", *furthest->name, "' [",
                 furthest->begin, ", ", furthest->end, ") and '", *e->name, "' [", e->begin, ", ", e->end,
                 ") overlap in the data section");
    if (!furthest || e->end > furthest->end) furthest = e;
  }
  for (const Entry& e : entries) {
    // Every entry was checked above: See Note [Validate, then allocate]
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), payload + e.begin, static_cast<size_t>(e.end - e.begin));
    file.tensors.emplace(*e.name, std::move(t));
  }
  return file;
}

SafetensorsFile load_safetensors(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path, "tensor::load_safetensors");
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  Json header(Json::Object{});
  if (!metadata.empty()) {
    Json meta(Json::Object{});
    for (const auto& [k, v] : metadata) meta.set(k, Json(v));
    header.set("__metadata__", meta);
  }
  std::vector<Tensor> packed;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    TENSOR_CHECK(t.defined(), "tensor::save_safetensors: tensor '", name, "' is undefined");
    TENSOR_CHECK(name != "__metadata__", "tensor::save_safetensors: '__metadata__' is reserved");
    packed.push_back(t.to(Device::cpu()).contiguous());
    Json entry(Json::Object{});
    entry.set("dtype", Json(st_name(t.dtype())));
    Json shape(Json::Array{});
    for (int64_t s : t.sizes()) shape.push(Json(s));
    entry.set("shape", shape);
    entry.set("data_offsets", Json(Json::Array{Json(offset), Json(offset + t.nbytes())}));
    header.set(name, entry);
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes, as the reference writer does
  std::vector<uint8_t> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* data = out.data() + 8 + text.size();
  for (const Tensor& t : packed) {
    if (t.nbytes()) std::memcpy(data, t.raw_data(), t.nbytes());
    data += t.nbytes();
  }
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::vector<uint8_t> bytes = serialize_safetensors(tensors, metadata);
  write_file_atomic(path, bytes.data(), bytes.size(), "tensor::save_safetensors");
}

}  // namespace tensor
