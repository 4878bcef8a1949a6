// Prepacked linears on oneDNN's matmul (see prepacked_linear.h).
//
// oneDNN compiles a kernel per problem shape (a primitive); creating one
// takes ~0.1-0.2 ms and ~80 KB, so rows are padded to a few buckets
// (BucketRows) and each thread keeps the few primitives it alternates
// between (PrimitiveFor). The packed
// layout was measured to be the same for every row count (1 to 2048, every
// shape of the yardstick); should a primitive ever want another, the
// weight is reordered into it for that call (slower, never wrong).
#include "infer/prepacked_linear.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/check.h"

namespace pw {
namespace {

using dnnl::algorithm;
using dnnl::matmul;
using dnnl::memory;
using Dims = memory::dims;

// Rows used to ask oneDNN for the packed layout (any count gives the same).
constexpr int64_t kLayoutRows = 128;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::desc Plain(int64_t rows, int64_t cols) {
  return memory::desc(Dims{rows, cols}, memory::data_type::f32, memory::format_tag::ab);
}

// W^T [in, out] as nn.Linear's row-major W [out, in] holds it.
memory::desc WeightPlain(int64_t out, int64_t in) {
  return memory::desc(Dims{in, out}, memory::data_type::f32, memory::format_tag::ba);
}

matmul::primitive_desc Describe(int64_t rows, int64_t out, int64_t in, bool bias,
                                LinearEpilogue epilogue) {
  dnnl::post_ops ops;
  if (epilogue == LinearEpilogue::kGelu) {
    ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  } else if (epilogue == LinearEpilogue::kResidual) {
    ops.append_binary(algorithm::binary_add, Plain(rows, out));
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  // The scratchpad (a few hundred bytes) comes from the caller's thread.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc weights(Dims{in, out}, memory::data_type::f32, memory::format_tag::any);
  const matmul::desc desc = bias ? matmul::desc(Plain(rows, in), weights, Plain(1, out), Plain(rows, out))
                                 : matmul::desc(Plain(rows, in), weights, Plain(rows, out));
  return matmul::primitive_desc(desc, attr, CpuEngine());
}

// The packed layout of [out, in] (empty desc: not packable). Computed once
// per shape.
memory::desc PackedLayout(int64_t out, int64_t in) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, int64_t>, memory::desc> layouts;
  std::lock_guard<std::mutex> lock(mu);
  auto it = layouts.find({out, in});
  if (it != layouts.end()) return it->second;
  memory::desc layout;
  try {
    const matmul::primitive_desc pd = Describe(kLayoutRows, out, in, true, LinearEpilogue::kNone);
    // Only the blocked (brgemm) kernels gain from packing; oneDNN's plain
    // GEMM fallback (CPUs without AVX-512) is no faster than OpenBLAS.
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("brg", 0) == 0 &&
        pd.weights_desc().get_size() == static_cast<size_t>(out * in) * sizeof(float)) {
      layout = pd.weights_desc();
    }
  } catch (const dnnl::error&) {
    // No kernel for this shape: leave the weight plain.
  }
  layouts.emplace(std::make_pair(out, in), layout);
  return layout;
}

struct Compiled {
  std::tuple<int64_t, int64_t, int64_t, bool, int> key;  // rows, out, in, bias, epilogue
  matmul primitive;
  memory::desc weights;  // the layout this primitive reads
  // The layout differs from PackedLayout's: each call reorders the weight
  // into it (never seen; slower, never wrong). Decided once, here.
  bool reorder = false;
  size_t scratchpad = 0;
};

// Rows a primitive is compiled for: 1 to 4 as they are, then 8 and 16
// (small passes read the weights more than they compute: a few padding
// rows cost nothing measurable), then steps of 16 (of an eighth of the
// power of two below, when that is more), so that a run meets a few shapes
// per octave, not one per row count; the padding costs at most 1/8 more
// arithmetic above 128 rows.
int64_t BucketRows(int64_t rows) {
  if (rows <= 4) return rows;
  if (rows <= 8) return 8;
  if (rows <= 16) return 16;
  int64_t power = 1;
  while (power * 2 <= rows) power *= 2;
  const int64_t step = std::max<int64_t>(16, power / 8);
  return (rows + step - 1) / step * step;
}

// This thread's primitives, most recently used first. Each holds ~80 KB of
// generated code (256 of them took 21 MB), memory the plan does not charge,
// so only the few a run alternates between are kept: the four linears at
// the decode shape and at one other (a prefill's). oneDNN's own
// process-wide cache is switched off (it would keep 1,024 of them).
constexpr size_t kKeptPrimitives = 8;

const Compiled& PrimitiveFor(int64_t rows, int64_t out, int64_t in, bool bias,
                             LinearEpilogue epilogue) {
  static const bool no_global_cache = [] {
    dnnl::set_primitive_cache_capacity(0);
    return true;
  }();
  (void)no_global_cache;
  thread_local std::vector<Compiled> kept;  // front: most recent
  const auto key = std::make_tuple(rows, out, in, bias, static_cast<int>(epilogue));
  auto it = std::find_if(kept.begin(), kept.end(), [&](const Compiled& c) { return c.key == key; });
  if (it == kept.end()) {
    const matmul::primitive_desc pd = Describe(rows, out, in, bias, epilogue);
    if (kept.size() >= kKeptPrimitives) kept.pop_back();
    kept.insert(kept.begin(), Compiled{key, matmul(pd), pd.weights_desc(),
                                       pd.weights_desc() != PackedLayout(out, in),
                                       pd.scratchpad_desc().get_size()});
  } else if (it != kept.begin()) {
    std::rotate(kept.begin(), it, it + 1);
  }
  return kept.front();
}

// `t` [rows, cols] as [padded, cols]: itself when no padding is needed,
// else a copy with zero rows below.
at::Tensor PadRows(const at::Tensor& t, int64_t padded) {
  if (t.size(0) == padded) return t;
  at::Tensor p = at::empty({padded, t.size(1)}, t.options());
  p.narrow(0, 0, t.size(0)).copy_(t);
  p.narrow(0, t.size(0), padded - t.size(0)).zero_();
  return p;
}

memory Wrap(const memory::desc& desc, const at::Tensor& t) {
  return memory(desc, CpuEngine(), const_cast<void*>(t.data_ptr()));
}

}  // namespace

bool PrepackableLinear(int64_t out, int64_t in) {
  return out > 0 && in > 0 && !PackedLayout(out, in).is_zero();
}

std::string PrepackedLayoutSignature(int64_t out, int64_t in) {
  if (!PrepackableLinear(out, in)) return "";
  const dnnl_memory_desc_t& d = PackedLayout(out, in).data;
  const dnnl_version_t* v = dnnl_version();
  std::string sig = "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                    std::to_string(v->patch) + " isa " +
                    std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa())) + " [" +
                    std::to_string(out) + "x" + std::to_string(in) + "] strides";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  for (int i = 0; i < d.ndims; ++i) sig += " " + std::to_string(b.strides[i]);
  sig += " blocks";
  for (int i = 0; i < b.inner_nblks; ++i) {
    sig += " " + std::to_string(b.inner_blks[i]) + "@" + std::to_string(b.inner_idxs[i]);
  }
  return sig + " flags " + std::to_string(d.extra.flags);
}

void PrepackLinearWeight(const at::Tensor& weight, at::Tensor& packed) {
  PW_CHECK(weight.dim() == 2 && weight.is_contiguous() && weight.scalar_type() == at::kFloat,
           "PrepackLinearWeight: weight must be contiguous fp32 [out, in]");
  const int64_t out = weight.size(0), in = weight.size(1);
  PW_CHECK(packed.is_contiguous() && packed.scalar_type() == at::kFloat &&
               packed.numel() == out * in,
           "PrepackLinearWeight: packed must be contiguous fp32 of out * in values");
  PW_CHECK(PrepackableLinear(out, in), "PrepackLinearWeight: [" + std::to_string(out) + ", " +
                                        std::to_string(in) + "] is not packable here");
  try {
    dnnl::stream stream(CpuEngine());
    memory src = Wrap(WeightPlain(out, in), weight), dst = Wrap(PackedLayout(out, in), packed);
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
  } catch (const dnnl::error& e) {
    TORCH_CHECK(false, "oneDNN weight packing [", out, ", ", in, "]: ", e.what());
  }
}

at::Tensor PrepackedLinear(const at::Tensor& x_in, const at::Tensor& packed, int64_t out,
                           const at::Tensor& bias, LinearEpilogue epilogue,
                           const at::Tensor& residual) {
  const at::Tensor x = x_in.contiguous();
  PW_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "PrepackedLinear: x must be fp32 [rows, in]");
  const int64_t rows = x.size(0), in = x.size(1);
  PW_CHECK(packed.is_contiguous() && packed.numel() == out * in,
           "PrepackedLinear: packed weight of " + std::to_string(packed.numel()) +
               " values does not hold [" + std::to_string(out) + ", " + std::to_string(in) + "]");
  PW_CHECK(!bias.defined() || bias.numel() == out, "PrepackedLinear: bias must have out values");
  if (rows == 0) return at::empty({0, out}, x.options());
  at::Tensor res;
  if (epilogue == LinearEpilogue::kResidual) {
    res = residual.contiguous();
    PW_CHECK(res.dim() == 2 && res.size(0) == rows && res.size(1) == out &&
                 res.scalar_type() == at::kFloat,
             "PrepackedLinear: residual must be fp32 [rows, out]");
  }
  const int64_t padded = BucketRows(rows);
  const at::Tensor xp = PadRows(x, padded);
  if (res.defined()) res = PadRows(res, padded);
  at::Tensor y = at::empty({padded, out}, x.options());
  try {
    const Compiled& c = PrimitiveFor(padded, out, in, bias.defined(), epilogue);
    thread_local dnnl::stream stream(CpuEngine());
    thread_local std::vector<char> scratch;
    if (scratch.size() < c.scratchpad) scratch.resize(c.scratchpad);
    memory weights = Wrap(c.reorder ? PackedLayout(out, in) : c.weights, packed);
    if (c.reorder) {
      memory converted(c.weights, CpuEngine());
      dnnl::reorder(weights, converted).execute(stream, weights, converted);
      weights = converted;
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, Wrap(Plain(padded, in), xp)},
                                         {DNNL_ARG_WEIGHTS, weights},
                                         {DNNL_ARG_DST, Wrap(Plain(padded, out), y)}};
    if (c.scratchpad > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   memory(memory::desc(Dims{static_cast<int64_t>(c.scratchpad)},
                                       memory::data_type::u8, memory::format_tag::a),
                          CpuEngine(), scratch.data()));
    }
    const at::Tensor b = bias.defined() ? bias.contiguous() : at::Tensor();
    if (b.defined()) args.emplace(DNNL_ARG_BIAS, Wrap(Plain(1, out), b));
    if (epilogue == LinearEpilogue::kResidual) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, Wrap(Plain(padded, out), res));
    }
    c.primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    TORCH_CHECK(false, "oneDNN matmul [", padded, " x ", in, "] x [", in, " x ", out, "]: ", e.what());
  }
  return padded == rows ? y : y.narrow(0, 0, rows);
}

}  // namespace pw
