#include "model/safetensors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

namespace pw {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

// Bound on the header so that a corrupt length cannot ask for gigabytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
constexpr const char* kMetadataKey = "__metadata__";

Result<std::string> DtypeName(const at::Tensor& t) {
  if (t.scalar_type() == at::kFloat) return std::string("F32");
  if (t.scalar_type() == at::kLong) return std::string("I64");
  return Status::InvalidArgument(std::string("dtype ") + c10::toString(t.scalar_type()) +
                                 " (want float32 or int64)");
}

Status Malformed(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(path + ": not a valid safetensors file: " + what);
}

}  // namespace

Status WriteSafetensors(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, FileDigest* digest) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<at::Tensor> data;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey || !names.insert(name).second) {
      return Status::InvalidArgument(path + ": tensor name '" + name +
                                     "' is empty, reserved or repeated");
    }
    Result<std::string> dtype = DtypeName(tensor);
    if (!dtype.ok()) return Status::InvalidArgument(path + ": tensor '" + name + "': " +
                                                    dtype.status().message());
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[name] = {{"dtype", *dtype},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the spec's 8-byte alignment
  const uint64_t length = text.size();

  DurableFileWriter out(path);
  PW_RETURN_IF_ERROR(out.Open());
  PW_RETURN_IF_ERROR(out.Write(std::string_view(reinterpret_cast<const char*>(&length), sizeof(length))));
  PW_RETURN_IF_ERROR(out.Write(text));
  for (const at::Tensor& t : data) {
    PW_RETURN_IF_ERROR(out.Write(std::string_view(static_cast<const char*>(t.data_ptr()),
                                                  static_cast<size_t>(t.numel() * t.element_size()))));
  }
  PW_ASSIGN_OR_RETURN(FileDigest written, out.Commit());
  if (digest != nullptr) *digest = std::move(written);
  return Status::Ok();
}

Result<std::string> ReadSafetensorsBytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": no such safetensors file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IoError("cannot read " + path);
  return bytes;
}

Result<SafetensorsContents> ReadSafetensors(const std::string& path) {
  PW_ASSIGN_OR_RETURN(std::string bytes, ReadSafetensorsBytes(path));
  return ParseSafetensors(bytes, path);
}

Result<SafetensorsContents> ParseSafetensors(std::string_view bytes, const std::string& path) {
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
  const char* buffer = bytes.data() + 8 + length;

  SafetensorsContents contents;
  std::vector<std::pair<uint64_t, std::pair<std::string, at::Tensor>>> ordered;
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      if (!entry.is_object()) return Malformed(path, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return Malformed(path, "__metadata__ value '" + key + "' is not a string");
        }
        contents.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      return Malformed(path, where + "entry needs dtype, shape and data_offsets");
    }
    const nlohmann::json& dtype = entry["dtype"];
    at::ScalarType type;
    if (dtype == "F32") type = at::kFloat;
    else if (dtype == "I64") type = at::kLong;
    else return Malformed(path, where + "unsupported dtype " + dtype.dump() + " (want F32 or I64)");
    const nlohmann::json& shape_json = entry["shape"];
    if (!shape_json.is_array()) return Malformed(path, where + "shape is not an array");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const nlohmann::json& d : shape_json) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) {
        return Malformed(path, where + "shape " + shape_json.dump() +
                                   " has a dimension that is not a size");
      }
      shape.push_back(d.get<int64_t>());
      numel *= d.get<uint64_t>();
      if (numel > (uint64_t{1} << 40)) return Malformed(path, where + "shape too large");
    }
    const nlohmann::json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      return Malformed(path, where + "data_offsets is not [begin, end]");
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > buffer_size) {
      return Malformed(path, where + "data_offsets " + offsets.dump() +
                                 " outside the data buffer of " + std::to_string(buffer_size) +
                                 " bytes");
    }
    const uint64_t element = type == at::kFloat ? 4 : 8;
    if (end - begin != numel * element) {
      return Malformed(path, where + "shape " + shape_json.dump() + " needs " +
                                 std::to_string(numel * element) + " bytes but data_offsets " +
                                 offsets.dump() + " hold " + std::to_string(end - begin));
    }
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    if (end > begin) std::memcpy(t.data_ptr(), buffer + begin, end - begin);
    ordered.push_back({begin, {name, std::move(t)}});
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [begin, named] : ordered) contents.tensors.push_back(std::move(named));
  return contents;
}

}  // namespace pw
