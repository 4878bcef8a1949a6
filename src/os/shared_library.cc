#include "os/shared_library.h"

#include <dlfcn.h>

namespace pw {

Result<SharedLibrary> SharedLibrary::OpenIsolated(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status::IoError(why != nullptr ? std::string(why) : path + ": cannot load");
  }
  return SharedLibrary(handle);
}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* SharedLibrary::Symbol(const char* symbol) const { return handle_ == nullptr ? nullptr : ::dlsym(handle_, symbol); }

void* FindLoadedSymbol(const char* symbol) { return ::dlsym(RTLD_DEFAULT, symbol); }

}  // namespace pw
