// Shared libraries loaded at run time (dlopen), and symbols looked up in
// what the process has loaded already: the seam for the SentencePiece
// plugin and OpenBLAS's thread-count functions.
//
// Thread-safety: Open and the lookups may run on any thread (the dynamic
// loader serialises them); a SharedLibrary has one owner.
#pragma once

#include <string>

#include "core/status.h"

namespace pw {

class SharedLibrary {
 public:
  // Loads `path` with its symbols resolved now, kept local to it, and bound
  // to its own dependencies first (RTLD_DEEPBIND: a library that carries
  // its own copy of a dependency the process also loaded keeps using its
  // own). IoError with the loader's message when it cannot be loaded.
  static Result<SharedLibrary> OpenIsolated(const std::string& path);

  SharedLibrary(SharedLibrary&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // Unloads the library (its symbols must no longer be in use).
  ~SharedLibrary();

  // The address of `symbol` in this library, or null.
  void* Symbol(const char* symbol) const;

  // Keeps the library loaded for the rest of the process (the destructor
  // then unloads nothing): for plugins whose functions outlive any owner.
  void KeepLoaded() { handle_ = nullptr; }

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* handle_ = nullptr;
};

// The address of `symbol` among the libraries the process has loaded
// (RTLD_DEFAULT), or null when none defines it.
void* FindLoadedSymbol(const char* symbol);

}  // namespace pw
