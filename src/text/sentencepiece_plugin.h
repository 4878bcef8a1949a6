// The C interface of libpw_sentencepiece.so, the one object that links
// Debian's libsentencepiece. Why a plugin: libsentencepiece.so carries its
// own copy of protobuf-lite and exports those symbols; in a process that
// also loads LibTorch's libprotobuf.so, the two copies interpose and
// protobuf's static initialisers crash before main (measured: SIGSEGV in
// ReflectionOps::FindInitializationErrors). Loaded with dlopen(RTLD_LOCAL |
// RTLD_DEEPBIND), sentencepiece and its protobuf see only each other.
//
// Every function is thread-safe for concurrent calls on one processor
// (SentencePieceProcessor's encode/decode are const). Buffers returned
// through `out` pointers are malloc'd; free them with pw_sp_free_buffer.
#pragma once

#include <cstddef>

extern "C" {

// A loaded model, or null with the library's reason in `error`.
void* pw_sp_load(const char* path, char* error, size_t error_size);
void pw_sp_free(void* processor);
// 0 on success; otherwise -1 with the reason in `error`.
int pw_sp_encode(void* processor, const char* text, size_t text_size, int** ids, size_t* count, char* error,
                 size_t error_size);
int pw_sp_decode(void* processor, const int* ids, size_t count, char** text, size_t* text_size, char* error,
                 size_t error_size);
int pw_sp_piece_size(void* processor);
int pw_sp_bos_id(void* processor);
int pw_sp_eos_id(void* processor);
int pw_sp_unk_id(void* processor);
int pw_sp_is_control(void* processor, int id);
// The id of `piece`, or -1 when the model does not have it.
int pw_sp_piece_id(void* processor, const char* piece);
void pw_sp_free_buffer(void* buffer);

}  // extern "C"
