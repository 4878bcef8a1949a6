#include "model/safetensors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "model/safetensors_header.h"

namespace pw {
namespace {

Result<SafetensorsDtype> DtypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return SafetensorsDtype::kF32;
    case at::kLong: return SafetensorsDtype::kI64;
    case at::kHalf: return SafetensorsDtype::kF16;
    case at::kBFloat16: return SafetensorsDtype::kBF16;
    default: break;
  }
  return Status::InvalidArgument(std::string("dtype ") + c10::toString(t.scalar_type()) +
                                 " (want float32, float16, bfloat16 or int64)");
}

}  // namespace

at::ScalarType SafetensorsScalarType(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kI64: return at::kLong;
    case SafetensorsDtype::kF16: return at::kHalf;
    case SafetensorsDtype::kBF16: return at::kBFloat16;
    case SafetensorsDtype::kF32: break;
  }
  return at::kFloat;
}

namespace {

}  // namespace

Status WriteSafetensors(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, FileDigest* digest) {
  std::vector<SafetensorsEntry> entries;
  std::vector<at::Tensor> data;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second) {
      return Status::InvalidArgument(path + ": tensor name '" + name +
                                     "' is empty, reserved or repeated");
    }
    Result<SafetensorsDtype> dtype = DtypeOf(tensor);
    if (!dtype.ok()) return Status::InvalidArgument(path + ": tensor '" + name + "': " +
                                                    dtype.status().message());
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    entries.push_back({name, *dtype, t.sizes().vec(), offset, offset + bytes});
    offset += bytes;
    data.push_back(std::move(t));
  }

  DurableFileWriter out(path);
  PW_RETURN_IF_ERROR(out.Open());
  PW_RETURN_IF_ERROR(out.Write(FormatSafetensorsHeader(entries, metadata)));
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
  PW_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseSafetensorsHeader(bytes, path));
  const char* buffer = bytes.data() + header.data_start;
  SafetensorsContents contents;
  contents.metadata = std::move(header.metadata);
  for (const SafetensorsEntry& e : header.entries) {
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(SafetensorsScalarType(e.dtype)));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), buffer + e.begin, e.end - e.begin);
    contents.tensors.emplace_back(e.name, std::move(t));
  }
  return contents;
}

}  // namespace pw
