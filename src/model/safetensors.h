// safetensors files, written and read by hand (no Python, no Rust crate):
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   JSON header: {"<name>": {"dtype": "F32"|"I64", "shape": [...],
//             "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
//   rest      the tensors' raw little-endian bytes; offsets are relative to
//             the start of this buffer
//
// F32, F16, BF16 and I64 tensors are supported (checkpoints hold F32 and
// I64; Hugging Face weights often F16 or BF16). Writing is
// atomic and durable (model/durable_file.h): "<path>.tmp", fsync, rename
// over `path`, fsync of the directory, so a reader sees the old file or the
// new one, never a torn one; the writer can hand back the file's SHA-256.
// The header's parsing and validation live in model/safetensors_header.h,
// without LibTorch (fuzzed); this file turns its entries into tensors.
//
// Thread-safety: free functions without shared state; concurrent calls on
// different paths are safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/durable_file.h"
#include "model/safetensors_header.h"

namespace pw {

// The LibTorch element type of a safetensors dtype.
at::ScalarType SafetensorsScalarType(SafetensorsDtype dtype);

struct SafetensorsContents {
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;               // "__metadata__"
};

// Writes `tensors` (CPU or not, any layout; copied contiguous) and `metadata`
// to `path` atomically; the size and SHA-256 of what was written go to
// `digest` when given. Blocks on file I/O. InvalidArgument for a dtype other
// than float32/float16/bfloat16/int64, an empty or duplicate name, or the reserved name
// "__metadata__"; IoError when the file cannot be written or renamed.
Status WriteSafetensors(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata = {},
                        FileDigest* digest = nullptr);

// Reads and validates `path`: header length within the file, the header is a
// JSON object, every entry has a supported dtype, a non-negative shape and
// data_offsets inside the data buffer whose length matches the shape, and
// metadata values are strings. Blocks on file I/O. NotFound / IoError for the
// file, InvalidArgument for a malformed file; messages name the file and the
// tensor.
Result<SafetensorsContents> ReadSafetensors(const std::string& path);

// The bytes of `path` (NotFound / IoError naming it), for a caller that
// verifies them before parsing. Blocks on file I/O.
Result<std::string> ReadSafetensorsBytes(const std::string& path);

// ReadSafetensors' validation and decoding of the bytes of a file; `path`
// only names it in messages. Pure.
Result<SafetensorsContents> ParseSafetensors(std::string_view bytes, const std::string& path);

}  // namespace pw
