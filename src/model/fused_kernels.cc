// Fused kernels (see fused_kernels.h): the attention core driven per
// (sequence, head) over BLAS sgemm on strided head slices, the row kernels
// of fused_row_kernels.h for softmax and GELU, and the autograd Functions.
//
// Attention per (b, h), rows in blocks of kRowBlock queries: a block's
// queries see keys [0, kend) with kend = start + block end, so the score
// GEMM, softmax and weighted-sum GEMM skip the masked future beyond kend
// (for T = 128: 5/8 of the full T x T work). The softmax writes zeros from
// a row's last visible key to L, so every GEMM over a prefix of the row
// reads a correct row. Backward recomputes nothing: it reads the saved
// weights P, forms dS = P * (dP - rowsum(dP * P)) in place in dP, and tiles
// dK, dV by key blocks over the query rows that see them.
#include "model/fused_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "model/fused_row_kernels.h"
#include "os/environment.h"

// The Fortran BLAS of the process (libblas.so.3, which LibTorch's own
// matmuls use too): column-major, 32-bit sizes (Debian's LP64 OpenBLAS).
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc);

namespace pw {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kRowBlock = 32;

KernelIsa DetectIsa() {
  __builtin_cpu_init();
  // BW and VL too: the panel kernels load bf16 with masked 16-bit loads.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return KernelIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return KernelIsa::kAvx2;
  return KernelIsa::kScalar;
}

// The level a process starts at: the CPU's best, or the lower one that
// PIPEWRIGHT_KERNELS asks for (inherited by a job's ranks, so all of them
// run one level). A level the CPU cannot run, or a name that is not one,
// stops the process here with the reason: kernels are chosen once, at
// start-up, and never silently.
KernelIsa StartupIsa() {
  const KernelIsa best = DetectIsa();
  const std::optional<std::string> told = EnvironmentVariable(kKernelLevelEnv);
  if (!told || told->empty()) return best;
  const char* asked = told->c_str();
  std::optional<KernelIsa> isa = ParseKernelIsa(asked);
  if (!isa) {
    std::fprintf(stderr, "pipewright: %s=%s is not a kernel level; give avx512, avx2 or scalar (or unset it)\n",
                 kKernelLevelEnv, asked);
    std::exit(2);
  }
  if (static_cast<int>(*isa) > static_cast<int>(best)) {
    std::fprintf(stderr, "pipewright: %s=%s, but this CPU runs at most %s; unset it or give a lower level\n",
                 kKernelLevelEnv, asked, KernelIsaName(best));
    std::exit(2);
  }
  return *isa;
}

// The highest level this process may run: what the CPU has, capped by
// PIPEWRIGHT_KERNELS (so that a capped process behaves as a CPU of that
// kind would, tests included).
KernelIsa CapIsa() {
  static const KernelIsa cap = StartupIsa();
  return cap;
}

std::atomic<KernelIsa>& IsaSetting() {
  static std::atomic<KernelIsa> isa{CapIsa()};
  return isa;
}

const fused::RowKernels& Rows() { return fused::RowKernelsFor(IsaSetting().load()); }

// Row-major C[m, n] = alpha op(A) op(B) + beta C, through column-major BLAS
// (C^T = op(B)^T op(A)^T: swap the operands, keep the flags).
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ia = static_cast<int>(lda), ib = static_cast<int>(ldb), ic = static_cast<int>(ldc);
  sgemm_(&tb, &ta, &in, &im, &ik, &alpha, b, &ib, a, &ia, &beta, c, &ic);
}

// A [batch, rows, d] operand: element (b, i, j) at data[b * batch + i * row + j].
struct Slab {
  float* data;
  int64_t batch;
  int64_t row;
};

Slab SlabOf(const at::Tensor& t3) {
  return {t3.data_ptr<float>(), t3.stride(0), t3.stride(1)};
}

struct AttentionShape {
  int64_t batch, n, length, start, heads, head_dim;
  float scale;
  // Keys row i sees (every key for a single query, as CausalAttention).
  int64_t Visible(int64_t i) const { return n == 1 ? length : start + i + 1; }
};

std::vector<float>& Scratch(int64_t size) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer;
}

// probs: [batch, heads, n, length] to keep the weights for backward, or null.
void AttentionForward(const AttentionShape& s, Slab q, Slab k, Slab v, Slab out, float* probs) {
  const fused::RowKernels& rows = Rows();
  const int64_t hd = s.head_dim, L = s.length;
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / s.heads, h = bh % s.heads;
      float* p = probs != nullptr ? probs + bh * s.n * L : Scratch(s.n * L).data();
      const float* qb = q.data + b * q.batch + h * hd;
      const float* kb = k.data + b * k.batch + h * hd;
      const float* vb = v.data + b * v.batch + h * hd;
      float* ob = out.data + b * out.batch + h * hd;
      for (int64_t i0 = 0; i0 < s.n; i0 += kRowBlock) {
        const int64_t i1 = std::min(s.n, i0 + kRowBlock);
        const int64_t kend = std::min(L, s.Visible(i1 - 1));
        Gemm(false, true, i1 - i0, kend, hd, s.scale, qb + i0 * q.row, q.row, kb, k.row, 0.0f,
             p + i0 * L, L);
        for (int64_t i = i0; i < i1; ++i) rows.softmax(p + i * L, std::min(L, s.Visible(i)), L);
        Gemm(false, false, i1 - i0, hd, kend, 1.0f, p + i0 * L, L, vb, v.row, 0.0f,
             ob + i0 * out.row, out.row);
      }
    }
  });
}

void ZeroRows(float* data, int64_t row_stride, int64_t from, int64_t to, int64_t width) {
  for (int64_t j = from; j < to; ++j) std::memset(data + j * row_stride, 0, sizeof(float) * width);
}

void AttentionBackward(const AttentionShape& s, Slab q, Slab k, Slab v, const float* probs,
                       Slab dout, Slab dq, Slab dk, Slab dv) {
  const fused::RowKernels& rows = Rows();
  const int64_t hd = s.head_dim, L = s.length;
  at::parallel_for(0, s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    float* ds = Scratch(s.n * L).data();
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / s.heads, h = bh % s.heads, col = h * hd;
      const float* p = probs + bh * s.n * L;
      const float* qb = q.data + b * q.batch + col;
      const float* kb = k.data + b * k.batch + col;
      const float* vb = v.data + b * v.batch + col;
      const float* gb = dout.data + b * dout.batch + col;
      float* dqb = dq.data + b * dq.batch + col;
      float* dkb = dk.data + b * dk.batch + col;
      float* dvb = dv.data + b * dv.batch + col;
      for (int64_t i0 = 0; i0 < s.n; i0 += kRowBlock) {
        const int64_t i1 = std::min(s.n, i0 + kRowBlock);
        const int64_t kend = std::min(L, s.Visible(i1 - 1));
        // dP = dO V^T, then dS in place; dQ = scale dS K.
        Gemm(false, true, i1 - i0, kend, hd, 1.0f, gb + i0 * dout.row, dout.row, vb, v.row, 0.0f,
             ds + i0 * L, L);
        for (int64_t i = i0; i < i1; ++i) {
          rows.softmax_backward(p + i * L, ds + i * L, std::min(L, s.Visible(i)), L);
        }
        Gemm(false, false, i1 - i0, hd, kend, s.scale, ds + i0 * L, L, kb, k.row, 0.0f,
             dqb + i0 * dq.row, dq.row);
      }
      // Key block [j0, j1) is seen by queries i >= j0 - start (all of them
      // for a single query); keys no query sees get zero gradient.
      for (int64_t j0 = 0; j0 < L; j0 += kRowBlock) {
        const int64_t j1 = std::min(L, j0 + kRowBlock);
        const int64_t from = s.n == 1 ? 0 : std::max<int64_t>(0, j0 - s.start);
        if (from >= s.n) {
          ZeroRows(dvb, dv.row, j0, j1, hd);
          ZeroRows(dkb, dk.row, j0, j1, hd);
          continue;
        }
        Gemm(true, false, j1 - j0, hd, s.n - from, 1.0f, p + from * L + j0, L,
             gb + from * dout.row, dout.row, 0.0f, dvb + j0 * dv.row, dv.row);
        Gemm(true, false, j1 - j0, hd, s.n - from, s.scale, ds + from * L + j0, L,
             qb + from * q.row, q.row, 0.0f, dkb + j0 * dk.row, dk.row);
      }
    }
  });
}

// t as [batch, rows, d] with unit column stride (a view when it can be).
at::Tensor As3d(const at::Tensor& t) {
  at::Tensor t3 = t.dim() == 2 ? t.unsqueeze(0) : t.reshape({-1, t.size(-2), t.size(-1)});
  if (t3.stride(2) != 1 || t3.stride(1) < t3.size(2)) t3 = t3.contiguous();
  return t3;
}

AttentionShape ShapeOf(const at::Tensor& q3, const at::Tensor& k3, int64_t start, int n_heads) {
  const int64_t d = q3.size(2);
  TORCH_CHECK(n_heads > 0 && d % n_heads == 0, "attention width ", d, " not divisible by ",
              n_heads, " heads");
  TORCH_CHECK(k3.size(0) == q3.size(0) && k3.size(2) == d, "attention q/k shapes differ");
  TORCH_CHECK(start >= 0 && k3.size(1) >= start + q3.size(1), "attention over ", k3.size(1),
              " keys cannot hold queries at [", start, ", ", start + q3.size(1), ")");
  const int64_t hd = d / n_heads;
  return {q3.size(0), q3.size(1), k3.size(1), start, n_heads, hd,
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
}

class AttentionFunction : public torch::autograd::Function<AttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, int64_t start, int64_t n_heads) {
    at::Tensor q3 = As3d(q), k3 = As3d(k), v3 = As3d(v);
    const AttentionShape s = ShapeOf(q3, k3, start, static_cast<int>(n_heads));
    TORCH_CHECK(v3.sizes() == k3.sizes(), "attention k/v shapes differ");
    at::Tensor out = at::empty({s.batch, s.n, q3.size(2)}, q.options());
    at::Tensor probs = at::empty({s.batch, s.heads, s.n, s.length}, q.options());
    AttentionForward(s, SlabOf(q3), SlabOf(k3), SlabOf(v3), SlabOf(out), probs.data_ptr<float>());
    ctx->save_for_backward({q3, k3, v3, probs});
    ctx->saved_data["start"] = start;
    ctx->saved_data["heads"] = n_heads;
    ctx->saved_data["q_sizes"] = q.sizes().vec();
    ctx->saved_data["k_sizes"] = k.sizes().vec();
    return out.view(q.sizes());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q3 = saved[0], &k3 = saved[1], &v3 = saved[2], &probs = saved[3];
    const AttentionShape s = ShapeOf(q3, k3, ctx->saved_data["start"].toInt(),
                                     static_cast<int>(ctx->saved_data["heads"].toInt()));
    at::Tensor g3 = As3d(grad_outputs[0].reshape(q3.sizes()));
    at::Tensor dq = at::empty(q3.sizes(), q3.options());
    at::Tensor dk = at::empty(k3.sizes(), k3.options());
    at::Tensor dv = at::empty(v3.sizes(), v3.options());
    AttentionBackward(s, SlabOf(q3), SlabOf(k3), SlabOf(v3), probs.data_ptr<float>(), SlabOf(g3),
                      SlabOf(dq), SlabOf(dk), SlabOf(dv));
    const std::vector<int64_t> q_sizes = ctx->saved_data["q_sizes"].toIntVector();
    const std::vector<int64_t> k_sizes = ctx->saved_data["k_sizes"].toIntVector();
    return {dq.view(q_sizes), dk.view(k_sizes), dv.view(k_sizes), at::Tensor(), at::Tensor()};
  }
};

// Slices of qkv [B, T, 3d] as q, k, v slabs.
void QkvSlabs(const at::Tensor& qkv, int64_t d, Slab* q, Slab* k, Slab* v) {
  const Slab all = SlabOf(qkv);
  *q = all;
  *k = {all.data + d, all.batch, all.row};
  *v = {all.data + 2 * d, all.batch, all.row};
}

AttentionShape SelfShape(const at::Tensor& qkv, int n_heads) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % 3 == 0, "self-attention wants qkv [B, T, 3d]");
  const int64_t d = qkv.size(2) / 3;
  TORCH_CHECK(n_heads > 0 && d % n_heads == 0, "attention width ", d, " not divisible by ",
              n_heads, " heads");
  const int64_t hd = d / n_heads;
  return {qkv.size(0), qkv.size(1), qkv.size(1), 0, n_heads, hd,
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
}

class SelfAttentionFunction : public torch::autograd::Function<SelfAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv_in, int64_t n_heads) {
    at::Tensor qkv = qkv_in.contiguous();
    const AttentionShape s = SelfShape(qkv, static_cast<int>(n_heads));
    const int64_t d = s.heads * s.head_dim;
    at::Tensor out = at::empty({s.batch, s.n, d}, qkv.options());
    at::Tensor probs = at::empty({s.batch, s.heads, s.n, s.length}, qkv.options());
    Slab q, k, v;
    QkvSlabs(qkv, d, &q, &k, &v);
    AttentionForward(s, q, k, v, SlabOf(out), probs.data_ptr<float>());
    ctx->save_for_backward({qkv, probs});
    ctx->saved_data["heads"] = n_heads;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &probs = saved[1];
    const AttentionShape s = SelfShape(qkv, static_cast<int>(ctx->saved_data["heads"].toInt()));
    const int64_t d = s.heads * s.head_dim;
    at::Tensor g = As3d(grad_outputs[0]);
    at::Tensor dqkv = at::empty(qkv.sizes(), qkv.options());
    Slab q, k, v, dq, dk, dv;
    QkvSlabs(qkv, d, &q, &k, &v);
    QkvSlabs(dqkv, d, &dq, &dk, &dv);
    AttentionBackward(s, q, k, v, probs.data_ptr<float>(), SlabOf(g), dq, dk, dv);
    return {dqkv, at::Tensor()};
  }
};

void GeluRows(const at::Tensor& x, at::Tensor& y) {
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  const fused::RowKernels& rows = Rows();
  at::parallel_for(0, x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    rows.gelu(in + begin, out + begin, end - begin);
  });
}

class GeluFunction : public torch::autograd::Function<GeluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in) {
    at::Tensor x = x_in.contiguous();
    at::Tensor y = at::empty_like(x);
    GeluRows(x, y);
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    at::Tensor dy = grad_outputs[0].contiguous();
    at::Tensor dx = at::empty_like(x);
    const float* in = x.data_ptr<float>();
    const float* g = dy.data_ptr<float>();
    float* out = dx.data_ptr<float>();
    const fused::RowKernels& rows = Rows();
    at::parallel_for(0, x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      rows.gelu_backward(in + begin, g + begin, out + begin, end - begin);
    });
    return {dx};
  }
};

bool WantsGrad(std::initializer_list<const at::Tensor*> tensors) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : tensors) {
    if (t->requires_grad()) return true;
  }
  return false;
}

}  // namespace

KernelIsa ActiveKernelIsa() { return IsaSetting().load(); }

const char* KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512: return "avx512";
    case KernelIsa::kAvx2: return "avx2";
    case KernelIsa::kScalar: break;
  }
  return "scalar";
}

std::optional<KernelIsa> ParseKernelIsa(std::string_view name) {
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (name == KernelIsaName(isa)) return isa;
  }
  return std::nullopt;
}

bool CpuSupportsIsa(KernelIsa isa) {
  return static_cast<int>(isa) <= static_cast<int>(CapIsa());
}

KernelIsa SetKernelIsaForTesting(KernelIsa isa) {
  TORCH_CHECK(CpuSupportsIsa(isa), "this CPU cannot run the requested kernel level");
  return IsaSetting().exchange(isa);
}

bool FusedKernelsApply(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat &&
         x.layout() == at::kStrided && x.dim() >= 1;
}

at::Tensor FusedGelu(const at::Tensor& x) {
  if (WantsGrad({&x})) return GeluFunction::apply(x);
  at::Tensor xc = x.contiguous();
  at::Tensor y = at::empty_like(xc);
  GeluRows(xc, y);
  return y;
}

at::Tensor FusedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t start, int n_heads) {
  if (WantsGrad({&q, &k, &v})) return AttentionFunction::apply(q, k, v, start, n_heads);
  at::Tensor q3 = As3d(q), k3 = As3d(k), v3 = As3d(v);
  const AttentionShape s = ShapeOf(q3, k3, start, n_heads);
  TORCH_CHECK(v3.sizes() == k3.sizes(), "attention k/v shapes differ");
  at::Tensor out = at::empty({s.batch, s.n, q3.size(2)}, q.options());
  AttentionForward(s, SlabOf(q3), SlabOf(k3), SlabOf(v3), SlabOf(out), nullptr);
  return out.view(q.sizes());
}

at::Tensor FusedSelfAttention(const at::Tensor& qkv, int n_heads) {
  if (WantsGrad({&qkv})) return SelfAttentionFunction::apply(qkv, n_heads);
  at::Tensor c = qkv.contiguous();
  const AttentionShape s = SelfShape(c, n_heads);
  const int64_t d = s.heads * s.head_dim;
  at::Tensor out = at::empty({s.batch, s.n, d}, c.options());
  Slab q, k, v;
  QkvSlabs(c, d, &q, &k, &v);
  AttentionForward(s, q, k, v, SlabOf(out), nullptr);
  return out;
}

}  // namespace pw
