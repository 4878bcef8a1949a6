// Activation offload: the tensors a stage's forward saved for its backward,
// moved off the device after F (OFFLOAD) and back before B/I (RELOAD).
//
// LibTorch reaches a graph's saved tensors only through saved-tensor hooks.
// In 1.13 its default hooks are Python-only (at::SavedTensorDefaultHooks
// takes PyObject*), but every SavedVariable asks the default autograd engine
// for hooks (Engine::get_default_saved_variable_hooks, nullptr in the base
// engine) — which is how PyTorch's own PythonEngine supplies them.
// InstallOffloadEngine() makes the default engine a subclass of the base
// engine that supplies hooks only on a thread inside a CaptureScope; on every
// other thread, and outside scopes, autograd runs exactly as before.
//
// Inside a scope each saved tensor is registered in the scope's
// OffloadStore (one per stage and microbatch), one entry per storage: a
// tensor saved by several nodes, or several views of one storage, is moved
// once. Left in place (the hook just holds the tensor, as autograd would):
// leaves that require grad (parameters, the stage's boundary input), tensors
// sharing storage with a caller-named "kept" storage (parameters, the
// stage's input and targets: their owners hold them anyway, so moving them
// would cost a copy and free nothing), tensors without storage.
//
// OFFLOAD copies each stored storage into a fresh buffer on the host device
// (pinned when it leaves a CUDA device) and drops the device copy; RELOAD
// copies it back to the device it came from. The backward unpacks views of
// whatever storage the entry holds then, with the saved geometry, so the
// gradients are bit for bit those without offload (the bytes round-trip
// exactly). A backward while offloaded is a schedule bug: StageModule
// refuses it with a Status before autograd runs; the hook itself, reached
// only by running the graph some other way, throws c10::Error.
//
// Process-wide state: the autograd engine is one per process by LibTorch's
// design (Engine::get_default_engine), so installing ours is too; the
// per-thread scope pointer is the only other state. No data is global: each
// store belongs to its microbatch.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pw {

// Installs the offload-capable autograd engine as the process's default
// (idempotent, thread-safe). StageModule's constructor calls it, so it is
// in place before any stage's forward. Best before any autograd use at all;
// installing after some is safe too (pw_model_test runs plain autograd
// tests first): the engines share no per-graph state, CPU backward runs on
// the calling thread, and only CUDA device threads are per engine. Returns
// whether the default engine is ours afterwards (false only if someone
// replaced it again, e.g. PyTorch's Python bindings loaded later).
bool InstallOffloadEngine();

struct OffloadEntry;

// The saved tensors of one stage's forward for one microbatch. Not
// thread-safe: the rank's executor thread fills it (inside a CaptureScope)
// and moves it; autograd reads it on the same thread during the backward.
class OffloadStore {
 public:
  // `kept`: StorageImpl addresses never to move (see the header comment).
  explicit OffloadStore(std::unordered_set<const void*> kept);
  ~OffloadStore();
  OffloadStore(const OffloadStore&) = delete;
  OffloadStore& operator=(const OffloadStore&) = delete;

  // Copies every registered storage to `host` and releases the device
  // copies; returns the bytes copied. PW_CHECKs that it is not offloaded.
  // Blocks for the copy (on CUDA the copy is asynchronous on the current
  // stream into pinned memory; later work on that stream is ordered after it).
  int64_t Offload(c10::Device host);
  // Copies every storage back to the device it came from; returns the bytes
  // copied. PW_CHECKs that it is offloaded.
  int64_t Reload();

  bool offloaded() const { return offloaded_; }
  // Distinct storages registered and their bytes; tensors left in place.
  int64_t storages() const { return static_cast<int64_t>(entries_.size()); }
  int64_t bytes() const;
  int64_t kept_tensors() const { return kept_tensors_; }

 private:
  friend class OffloadHooks;
  // The entry of `tensor`'s storage, or null if the tensor stays in place.
  std::shared_ptr<OffloadEntry> Register(const at::Tensor& tensor);

  std::unordered_set<const void*> kept_;
  std::vector<std::shared_ptr<OffloadEntry>> entries_;  // in registration order
  // The entries by their original StorageImpl, for deduplication while the
  // forward registers (the entries hold those storages, so an address cannot
  // be reused meanwhile); cleared by the first Offload.
  std::unordered_map<const void*, std::shared_ptr<OffloadEntry>> by_storage_;
  int64_t kept_tensors_ = 0;
  bool offloaded_ = false;
};

// While alive, tensors that autograd saves on this thread are registered in
// `store` (InstallOffloadEngine must have run). Scopes nest: the innermost
// wins, the outer one is restored. Not movable; one thread.
class CaptureScope {
 public:
  explicit CaptureScope(OffloadStore& store);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  OffloadStore* previous_;
  OffloadStore& store_;
};

}  // namespace pw
