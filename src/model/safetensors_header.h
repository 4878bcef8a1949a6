// The torch-free half of safetensors (model/safetensors.h): the 8-byte
// header length and the JSON header that describes the tensors, parsed and
// validated, and written. safetensors.cc turns the entries into tensors;
// keeping this part free of LibTorch lets the fuzz target
// (fuzz/safetensors_fuzz.cc) build it with clang and the sanitizers.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pw {

// Checkpoints hold F32 (and I64); Hugging Face weights are often F16 or
// BF16.
enum class SafetensorsDtype { kF32, kI64, kF16, kBF16 };

// "F32" / "I64" / "F16" / "BF16", the header's spelling.
std::string_view SafetensorsDtypeName(SafetensorsDtype dtype);
// 4 / 8 / 2 / 2.
uint64_t SafetensorsElementBytes(SafetensorsDtype dtype);

struct SafetensorsEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the data buffer

  bool operator==(const SafetensorsEntry&) const = default;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;       // in data-offset order
  std::map<std::string, std::string> metadata;  // "__metadata__"
  uint64_t data_start = 0;                      // the data buffer's offset in the file: 8 + N
};

// Validates the first 8 + N bytes of a safetensors file and the extents of
// its entries against the data buffer that follows: header length within
// the file (and at most 100 MiB), the header a JSON object, every entry
// with a supported dtype, a shape of sizes and data_offsets inside the
// buffer whose length matches the shape, metadata values strings.
// InvalidArgument "<path>: not a valid safetensors file: <what>", naming the
// tensor, otherwise. Does not read the data.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view bytes, const std::string& path);

// The 8-byte length and the JSON header (padded with blanks to a multiple
// of 8 bytes, as the spec asks) for `entries` and `metadata`; the data
// buffer follows it. Does not validate names (WriteSafetensors does).
// ParseSafetensorsHeader reads back the same entries and metadata.
std::string FormatSafetensorsHeader(const std::vector<SafetensorsEntry>& entries,
                                    const std::map<std::string, std::string>& metadata);

}  // namespace pw
