#include "model/activation_offload.h"

#include <ATen/ATen.h>
#include <ATen/SavedTensorHooks.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <mutex>
#include <string>
#include <utility>

#include "core/check.h"

namespace pw {

// One storage of saved tensors: where its bytes are now and where they came from.
struct OffloadEntry {
  c10::Storage storage;  // the device storage, or its host copy while offloaded
  c10::Device home;      // the device it came from (RELOAD's target)
  bool on_host = false;
};

namespace {

// The store that tensors saved on this thread go to; null outside scopes.
thread_local OffloadStore* tls_capture = nullptr;

// A byte tensor over the whole of `storage` (for copying it as it is).
at::Tensor Bytes(const c10::Storage& storage) {
  const int64_t n = static_cast<int64_t>(storage.nbytes());
  return at::empty({0}, at::TensorOptions().dtype(at::kByte).device(storage.device())).set_(storage, 0, {n}, {1});
}

// `storage` copied into a fresh buffer on `device`; pinned host memory when
// the copy leaves a CUDA device (so that it can run asynchronously).
c10::Storage CopyStorage(const c10::Storage& storage, c10::Device device) {
  const bool pin = device.is_cpu() && storage.device().is_cuda();
  at::Tensor dst = at::empty({static_cast<int64_t>(storage.nbytes())},
                             at::TensorOptions().dtype(at::kByte).device(device).pinned_memory(pin));
  dst.copy_(Bytes(storage), /*non_blocking=*/pin || (device.is_cuda() && storage.device().is_cpu()));
  return dst.storage();
}

}  // namespace

// The hooks of one saved tensor: either the tensor itself (left in place)
// or its storage entry plus the geometry to rebuild the view.
class OffloadHooks : public torch::autograd::SavedVariableHooks {
 public:
  explicit OffloadHooks(OffloadStore& store) : store_(&store) {}

  void call_pack_hook(const at::Tensor& tensor) override {
    // Autograd hands over the saved variable itself, which may be the
    // output of the node that saves it: holding it (with its grad_fn)
    // would make a reference cycle, so hold a detached alias.
    entry_ = store_->Register(tensor);
    store_ = nullptr;  // not needed after packing: the store may go before the graph
    if (entry_ == nullptr) {
      kept_ = tensor.detach();
      return;
    }
    dtype_ = tensor.scalar_type();
    offset_ = tensor.storage_offset();
    sizes_ = tensor.sizes().vec();
    strides_ = tensor.strides().vec();
  }

  at::Tensor call_unpack_hook() override {
    if (entry_ == nullptr) return kept_;
    TORCH_CHECK(!entry_->on_host,
                "pipewright: a backward unpacked an activation that OFFLOAD moved to the host and no RELOAD "
                "brought back; run RELOAD of this stage and microbatch before its B or I");
    return at::empty({0}, at::TensorOptions().dtype(dtype_).device(entry_->storage.device()))
        .set_(entry_->storage, offset_, sizes_, strides_);
  }

 private:
  OffloadStore* store_;
  std::shared_ptr<OffloadEntry> entry_;
  at::Tensor kept_;
  at::ScalarType dtype_ = at::kFloat;
  int64_t offset_ = 0;
  std::vector<int64_t> sizes_, strides_;
};

namespace {

// The base engine, plus saved-tensor hooks while this thread is in a
// CaptureScope (see the header).
class OffloadEngine : public torch::autograd::Engine {
 public:
  // Engine's own contract: a subclass stops the base before it is destroyed.
  ~OffloadEngine() override { stop(); }

  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    // is_enabled() is false where LibTorch forbids saved-tensor hooks (e.g.
    // under functorch transforms): then tensors are saved as usual, and
    // OFFLOAD finds nothing of them to move.
    if (tls_capture == nullptr || !at::SavedTensorDefaultHooks::is_enabled()) return nullptr;
    return std::make_unique<OffloadHooks>(*tls_capture);
  }

  static torch::autograd::Engine& Get() {
    static OffloadEngine engine;
    return engine;
  }
};

}  // namespace

bool InstallOffloadEngine() {
  static std::once_flag once;
  std::call_once(once, [] { torch::autograd::set_default_engine_stub(&OffloadEngine::Get); });
  return &torch::autograd::Engine::get_default_engine() == &OffloadEngine::Get();
}

OffloadStore::OffloadStore(std::unordered_set<const void*> kept) : kept_(std::move(kept)) {}

OffloadStore::~OffloadStore() = default;

std::shared_ptr<OffloadEntry> OffloadStore::Register(const at::Tensor& tensor) {
  PW_CHECK(!offloaded_);  // the forward has ended before its OFFLOAD
  const bool stays = !tensor.has_storage() || tensor.layout() != at::kStrided ||
                     (tensor.is_leaf() && tensor.requires_grad()) ||
                     kept_.count(tensor.storage().unsafeGetStorageImpl()) > 0;
  if (stays) {
    ++kept_tensors_;
    return nullptr;
  }
  const void* key = tensor.storage().unsafeGetStorageImpl();
  auto [it, inserted] = by_storage_.try_emplace(key);
  if (inserted) {
    it->second = std::make_shared<OffloadEntry>(OffloadEntry{tensor.storage(), tensor.device(), false});
    entries_.push_back(it->second);
  }
  return it->second;
}

int64_t OffloadStore::bytes() const {
  int64_t total = 0;
  for (const auto& e : entries_) total += static_cast<int64_t>(e->storage.nbytes());
  return total;
}

int64_t OffloadStore::Offload(c10::Device host) {
  PW_CHECK(!offloaded_);
  by_storage_.clear();  // registration is over; the addresses may be reused from here
  int64_t moved = 0;
  for (const auto& e : entries_) {
    // Replacing the storage drops the store's reference to the device copy:
    // it is freed unless something else (the caller) still holds it.
    e->storage = CopyStorage(e->storage, host);
    e->on_host = true;
    moved += static_cast<int64_t>(e->storage.nbytes());
  }
  offloaded_ = true;
  return moved;
}

int64_t OffloadStore::Reload() {
  PW_CHECK(offloaded_);
  int64_t moved = 0;
  for (const auto& e : entries_) {
    e->storage = CopyStorage(e->storage, e->home);
    e->on_host = false;
    moved += static_cast<int64_t>(e->storage.nbytes());
  }
  offloaded_ = false;
  return moved;
}

CaptureScope::CaptureScope(OffloadStore& store) : previous_(tls_capture), store_(store) { tls_capture = &store_; }

CaptureScope::~CaptureScope() { tls_capture = previous_; }

}  // namespace pw
