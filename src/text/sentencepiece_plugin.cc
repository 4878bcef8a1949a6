// libpw_sentencepiece.so: sentencepiece_plugin.h over
// sentencepiece::SentencePieceProcessor. Built as its own shared object
// (src/text/CMakeLists.txt), never linked into a binary.
#include "text/sentencepiece_plugin.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Processor = sentencepiece::SentencePieceProcessor;

void SetError(char* error, size_t error_size, const std::string& message) {
  if (error == nullptr || error_size == 0) return;
  std::strncpy(error, message.c_str(), error_size - 1);
  error[error_size - 1] = '\0';
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* pw_sp_load(const char* path, char* error, size_t error_size) {
  auto* processor = new Processor();
  const auto status = processor->Load(path);
  if (!status.ok()) {
    SetError(error, error_size, status.ToString());
    delete processor;
    return nullptr;
  }
  return processor;
}

__attribute__((visibility("default"))) void pw_sp_free(void* processor) { delete static_cast<Processor*>(processor); }

__attribute__((visibility("default"))) int pw_sp_encode(void* processor, const char* text, size_t text_size,
                                                        int** ids, size_t* count, char* error, size_t error_size) {
  std::vector<int> out;
  const auto status = static_cast<Processor*>(processor)->Encode(std::string(text, text_size), &out);
  if (!status.ok()) {
    SetError(error, error_size, status.ToString());
    return -1;
  }
  *count = out.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.empty() ? 1 : out.size())));
  if (!out.empty()) std::memcpy(*ids, out.data(), sizeof(int) * out.size());
  return 0;
}

__attribute__((visibility("default"))) int pw_sp_decode(void* processor, const int* ids, size_t count, char** text,
                                                        size_t* text_size, char* error, size_t error_size) {
  std::string out;
  const auto status = static_cast<Processor*>(processor)->Decode(std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) {
    SetError(error, error_size, status.ToString());
    return -1;
  }
  *text_size = out.size();
  *text = static_cast<char*>(std::malloc(out.empty() ? 1 : out.size()));
  if (!out.empty()) std::memcpy(*text, out.data(), out.size());
  return 0;
}

__attribute__((visibility("default"))) int pw_sp_piece_size(void* p) { return static_cast<Processor*>(p)->GetPieceSize(); }
__attribute__((visibility("default"))) int pw_sp_bos_id(void* p) { return static_cast<Processor*>(p)->bos_id(); }
__attribute__((visibility("default"))) int pw_sp_eos_id(void* p) { return static_cast<Processor*>(p)->eos_id(); }
__attribute__((visibility("default"))) int pw_sp_unk_id(void* p) { return static_cast<Processor*>(p)->unk_id(); }
__attribute__((visibility("default"))) int pw_sp_is_control(void* p, int id) {
  return static_cast<Processor*>(p)->IsControl(id) ? 1 : 0;
}
__attribute__((visibility("default"))) int pw_sp_piece_id(void* p, const char* piece) {
  auto* processor = static_cast<Processor*>(p);
  const int id = processor->PieceToId(piece);
  return id == processor->unk_id() && processor->IdToPiece(id) != piece ? -1 : id;
}
__attribute__((visibility("default"))) void pw_sp_free_buffer(void* buffer) { std::free(buffer); }

}  // extern "C"
