#include "model/safetensors_header.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace pw {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

// Bound on the header so that a corrupt length cannot ask for gigabytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
// Bound on a tensor's elements (and each dimension), far beyond a checkpoint's.
constexpr uint64_t kMaxElements = uint64_t{1} << 40;
constexpr const char* kMetadataKey = "__metadata__";

Status Malformed(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(path + ": not a valid safetensors file: " + what);
}

}  // namespace

std::string_view SafetensorsDtypeName(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kI64: return "I64";
    case SafetensorsDtype::kF16: return "F16";
    case SafetensorsDtype::kBF16: return "BF16";
    case SafetensorsDtype::kF32: break;
  }
  return "F32";
}

uint64_t SafetensorsElementBytes(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kI64: return 8;
    case SafetensorsDtype::kF16:
    case SafetensorsDtype::kBF16: return 2;
    case SafetensorsDtype::kF32: break;
  }
  return 4;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 8) {
    return Malformed(path, "file has " + std::to_string(bytes.size()) +
                               " bytes, shorter than the 8-byte header length");
  }
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), sizeof(length));
  if (length > kMaxHeaderBytes || length > bytes.size() - 8) {
    return Malformed(path, "header length " + std::to_string(length) + " exceeds the file (" +
                               std::to_string(bytes.size()) + " bytes) or the 100 MiB limit");
  }
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8,
                                                bytes.begin() + 8 + static_cast<long>(length),
                                                nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return Malformed(path, "header is not valid JSON");
  if (!header.is_object()) return Malformed(path, "header is not a JSON object");
  const uint64_t buffer_size = bytes.size() - 8 - length;

  SafetensorsHeader out;
  out.data_start = 8 + length;
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      if (!entry.is_object()) return Malformed(path, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return Malformed(path, "__metadata__ value '" + PrintableText(key) + "' is not a string");
        }
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + PrintableText(name) + "': ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      return Malformed(path, where + "entry needs dtype, shape and data_offsets");
    }
    SafetensorsEntry e;
    e.name = name;
    const nlohmann::json& dtype = entry["dtype"];
    bool known = false;
    for (SafetensorsDtype d : {SafetensorsDtype::kF32, SafetensorsDtype::kI64, SafetensorsDtype::kF16,
                               SafetensorsDtype::kBF16}) {
      if (dtype == SafetensorsDtypeName(d)) e.dtype = d, known = true;
    }
    if (!known) return Malformed(path, where + "unsupported dtype " + dtype.dump() + " (want F32, F16, BF16 or I64)");
    const nlohmann::json& shape_json = entry["shape"];
    if (!shape_json.is_array()) return Malformed(path, where + "shape is not an array");
    uint64_t numel = 1;
    for (const nlohmann::json& d : shape_json) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > kMaxElements) {
        return Malformed(path, where + "shape " + shape_json.dump() +
                                   " has a dimension that is not a size");
      }
      e.shape.push_back(d.get<int64_t>());
      numel *= d.get<uint64_t>();
      if (numel > kMaxElements) return Malformed(path, where + "shape too large");
    }
    const nlohmann::json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      return Malformed(path, where + "data_offsets is not [begin, end]");
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    if (e.begin > e.end || e.end > buffer_size) {
      return Malformed(path, where + "data_offsets " + offsets.dump() +
                                 " outside the data buffer of " + std::to_string(buffer_size) +
                                 " bytes");
    }
    const uint64_t element = SafetensorsElementBytes(e.dtype);
    if (e.end - e.begin != numel * element) {
      return Malformed(path, where + "shape " + shape_json.dump() + " needs " +
                                 std::to_string(numel * element) + " bytes but data_offsets " +
                                 offsets.dump() + " hold " + std::to_string(e.end - e.begin));
    }
    out.entries.push_back(std::move(e));
  }
  std::stable_sort(out.entries.begin(), out.entries.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  return out;
}

std::string FormatSafetensorsHeader(const std::vector<SafetensorsEntry>& entries,
                                    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  for (const SafetensorsEntry& e : entries) {
    header[e.name] = {{"dtype", SafetensorsDtypeName(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {e.begin, e.end}}};
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the spec's 8-byte alignment
  const uint64_t length = text.size();
  return std::string(reinterpret_cast<const char*>(&length), sizeof(length)) + text;
}

}  // namespace pw
