// Loading the decoder's parameters for inference. Both sources go through
// one table of parameter names and shapes (Slots), so a checkpoint and the
// random init fill exactly the same fields, and every kept block ends up as
// views into one packed tensor (the unit the weight pool serves).
#include "infer/model_weights.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "model/gpt.h"
#include "model/partitioner.h"
#include "model/checkpoint.h"
#include "model/hf_checkpoint.h"
#include "model/panel_linear.h"
#include "model/safetensors.h"

namespace pw {
namespace {

// One parameter: its name inside a unit, its shape, and the field it fills.
struct Field {
  std::string name;
  std::vector<int64_t> shape;
  at::Tensor* tensor;
};

// The block's parameters in packing order (model_weights.h), with the
// shapes the config gives them (model/gpt.cc): the norms' biases only for
// LayerNorm, the q/k/v bias with bias or qkv_bias, the other Linear biases
// with bias; q/k/v stacked ([d + 2 kv_width, d]); SwiGLU's gate and up
// stacked ([2h, d]).
std::vector<Field> BlockFields(BlockWeights& b, const ModelConfig& c) {
  const int64_t d = c.d_model, h = c.ffn_width(), qkv = c.qkv_width(), up = c.mlp_up_width();
  std::vector<Field> f = {{"ln1.weight", {d}, &b.ln1_weight},
                          {"ln1.bias", {d}, &b.ln1_bias},
                          {"attn.qkv.weight", {qkv, d}, &b.qkv_weight},
                          {"attn.qkv.bias", {qkv}, &b.qkv_bias},
                          {"attn.proj.weight", {d, d}, &b.proj_weight},
                          {"attn.proj.bias", {d}, &b.proj_bias},
                          {"ln2.weight", {d}, &b.ln2_weight},
                          {"ln2.bias", {d}, &b.ln2_bias},
                          {"mlp.fc.weight", {up, d}, &b.fc_weight},
                          {"mlp.fc.bias", {up}, &b.fc_bias},
                          {"mlp.proj.weight", {d, h}, &b.mlp_weight},
                          {"mlp.proj.bias", {d}, &b.mlp_bias}};
  std::erase_if(f, [&](const Field& x) {
    if (x.name == "ln1.bias" || x.name == "ln2.bias") return c.norm == NormKind::kRmsNorm;
    if (x.name == "attn.qkv.bias") return !c.has_qkv_bias();
    return x.name.ends_with(".bias") && !c.bias;
  });
  return f;
}

// One field of a block's flat form (PackBlock): where its bytes lie and
// what they hold.
struct Slot {
  at::Tensor* tensor;
  std::vector<int64_t> shape;  // as the config gives it ([out, in] for a linear)
  at::ScalarType dtype;
  bool linear;                 // one of the four linear weights
  int64_t offset, bytes;
};

// Offsets aligned so that every view is aligned for any vector load.
constexpr int64_t kFieldAlignment = 64;

bool IsLinearWeight(const std::string& name) {
  return name == "attn.qkv.weight" || name == "attn.proj.weight" || name == "mlp.fc.weight" ||
         name == "mlp.proj.weight";
}

at::Tensor* ScaleOf(BlockWeights& b, const std::string& name) {
  if (name == "attn.qkv.weight") return &b.qkv_scale;
  if (name == "attn.proj.weight") return &b.proj_scale;
  if (name == "mlp.fc.weight") return &b.fc_scale;
  return &b.mlp_scale;
}

// The block's flat form for `format`: BlockFields in order, the linear
// weights in the format, an int8 linear followed by its scales; *total:
// the bytes of all of it.
std::vector<Slot> BlockSlots(BlockWeights& b, const ModelConfig& c, WeightFormat format, int64_t* total) {
  const at::ScalarType linear_dtype = format == WeightFormat::kBf16   ? at::kBFloat16
                                      : format == WeightFormat::kInt8 ? at::kChar
                                                                      : at::kFloat;
  std::vector<Slot> slots;
  int64_t offset = 0;
  auto add = [&](at::Tensor* t, std::vector<int64_t> shape, at::ScalarType dtype, bool linear) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    const int64_t bytes = n * static_cast<int64_t>(c10::elementSize(dtype));
    slots.push_back({t, std::move(shape), dtype, linear, offset, bytes});
    offset += (bytes + kFieldAlignment - 1) / kFieldAlignment * kFieldAlignment;
  };
  for (Field& f : BlockFields(b, c)) {
    const bool linear = IsLinearWeight(f.name);
    add(f.tensor, f.shape, linear ? linear_dtype : at::kFloat, linear);
    if (linear && format == WeightFormat::kInt8) add(ScaleOf(b, f.name), {f.shape[0]}, at::kFloat, false);
  }
  *total = offset;
  return slots;
}

// Every parameter of the model under its gpt.h name; blocks only where
// `keep[i]`.
std::vector<Field> ModelFields(ModelWeights& w, const std::vector<bool>& keep) {
  const ModelConfig& c = w.config;
  const int64_t d = c.d_model;
  std::vector<Field> f = {{"embed.tok_emb", {c.vocab_size, d}, &w.tok_emb}};
  if (!c.rope()) f.push_back({"embed.pos_emb", {c.seq_len, d}, &w.pos_emb});
  for (int i = 0; i < c.n_layers; ++i) {
    if (!keep[i]) continue;
    for (Field& x : BlockFields(w.blocks[i], c)) {
      f.push_back({"blocks." + std::to_string(i) + "." + x.name, x.shape, x.tensor});
    }
  }
  f.push_back({"head.ln.weight", {d}, &w.head_ln_weight});
  if (c.norm != NormKind::kRmsNorm) f.push_back({"head.ln.bias", {d}, &w.head_ln_bias});
  // A tied head is the token embedding (PackKeptBlocks), not a parameter of its own.
  if (!c.tie_embeddings) f.push_back({"head.lm_head.weight", {c.vocab_size, d}, &w.lm_head});
  return f;
}

int64_t TensorBytes(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Fills every field from `found` (name -> tensor), checking dtype and shape;
// `where` names the source in messages.
Status FillFields(std::vector<Field>& fields,
                  std::map<std::string, std::pair<at::Tensor, std::string>>& found,
                  const std::string& where) {
  for (Field& f : fields) {
    auto it = found.find(f.name);
    if (it == found.end()) {
      return Status::InvalidArgument(where + ": tensor 'param/" + f.name +
                                     "' is missing; the checkpoint does not hold this model's "
                                     "parameters (was it written by pipewright train?)");
    }
    const at::Tensor& t = it->second.first;
    if (t.scalar_type() != at::kFloat || t.sizes() != at::IntArrayRef(f.shape)) {
      return Status::InvalidArgument(
          it->second.second + ": tensor 'param/" + f.name + "' is " +
          std::string(c10::toString(t.scalar_type())) + " " + c10::str(t.sizes()) +
          " but the model config (manifest) says float " + ShapeString(f.shape));
    }
    *f.tensor = t.contiguous();
  }
  return Status::Ok();
}

// Repacks `b` into one contiguous tensor it views (its flat form), then
// hands it to `finish`.
void FinishBlock(BlockWeights& b, const ModelConfig& config, const LoadFinishers& finish) {
  b = UnpackBlock(PackBlock(b, config), config);
  if (finish.block) finish.block(b);
}

// A tied head becomes the token embedding itself (one tensor, two uses); a
// rope model's frequencies are computed here, once; then finish.shared.
void FinishSharedParts(ModelWeights& w, const LoadFinishers& finish) {
  if (w.config.tie_embeddings) w.lm_head = w.tok_emb;
  if (w.config.rope()) w.rotary_frequencies = RotaryFrequencies(w.config);
  if (finish.shared) finish.shared(w);
}

// Every kept block through FinishBlock, then FinishSharedParts.
void FinishKeptBlocks(ModelWeights& w, const LoadFinishers& finish) {
  for (BlockWeights& b : w.blocks) {
    if (b.defined()) FinishBlock(b, w.config, finish);
  }
  FinishSharedParts(w, finish);
}

Result<std::vector<bool>> KeepMask(const ModelConfig& config, const std::vector<int>& keep_blocks,
                                   bool keep_all) {
  std::vector<bool> keep(config.n_layers, keep_all);
  for (int i : keep_blocks) {
    if (i < 0 || i >= config.n_layers) {
      return Status::InvalidArgument("block " + std::to_string(i) + " is outside the model (" +
                                     std::to_string(config.n_layers) + " blocks)");
    }
    keep[i] = true;
  }
  return keep;
}

Result<ModelWeights> LoadFromCheckpoint(const std::string& dir, const std::vector<int>& keep_blocks,
                                        bool keep_all, const LoadFinishers& finish) {
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadCheckpointManifest(dir));
  const std::string manifest_path = (std::filesystem::path(dir) / kCheckpointManifest).string();
  ModelWeights w;
  PW_ASSIGN_OR_RETURN(w.config, ParseModelConfig(manifest.model_config, manifest_path));
  PW_ASSIGN_OR_RETURN(std::vector<bool> keep, KeepMask(w.config, keep_blocks, keep_all));
  w.blocks.resize(w.config.n_layers);
  std::vector<Field> fields = ModelFields(w, keep);
  std::set<std::string> wanted;
  for (const Field& f : fields) wanted.insert(f.name);

  // Read only the stage files that hold something this rank keeps.
  std::map<std::string, std::pair<at::Tensor, std::string>> found;
  for (const CheckpointStage& stage : manifest.stages) {
    bool needed = stage.has_embedding || stage.has_head;
    for (int i = stage.first_block; i < stage.first_block + stage.num_blocks; ++i) {
      needed = needed || (i >= 0 && i < w.config.n_layers && keep[i]);
    }
    if (!needed) continue;
    const std::string path = (std::filesystem::path(dir) / stage.file).string();
    PW_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadCheckpointFile(dir, stage));  // verified
    for (auto& [name, tensor] : contents.tensors) {
      if (!name.starts_with("param/")) continue;  // optimizer moments
      std::string param = name.substr(6);
      if (wanted.count(param) == 0) continue;      // a block this rank does not keep
      if (found.count(param) != 0) {
        return Status::InvalidArgument(path + ": tensor '" + name + "' also appears in " +
                                       found[param].second + "; the checkpoint is inconsistent");
      }
      found[param] = {tensor, path};
    }
  }
  PW_RETURN_IF_ERROR(FillFields(fields, found, dir));
  FinishKeptBlocks(w, finish);
  return w;
}

Result<ModelWeights> LoadFromInit(const WeightSource& source, const std::vector<int>& keep_blocks,
                                  bool keep_all, const LoadFinishers& finish) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(source.config));
  ModelWeights w;
  w.config = source.config;
  PW_ASSIGN_OR_RETURN(std::vector<bool> keep, KeepMask(w.config, keep_blocks, keep_all));
  w.blocks.resize(w.config.n_layers);
  std::vector<Field> fields = ModelFields(w, keep);

  // One segment per unit: each unit draws from its own UnitSeed generator,
  // so these are the whole model's initial parameters without building the
  // blocks this rank does not keep.
  std::vector<StageSpan> spans;
  StageSpan embed;
  embed.has_embedding = true;
  spans.push_back(embed);
  for (int i = 0; i < w.config.n_layers; ++i) {
    if (!keep[i]) continue;
    StageSpan block;
    block.first_block = i;
    block.num_blocks = 1;
    spans.push_back(block);
  }
  StageSpan head;
  head.first_block = w.config.n_layers;
  head.has_head = true;
  spans.push_back(head);

  c10::NoGradGuard no_grad;
  std::map<std::string, std::pair<at::Tensor, std::string>> found;
  for (const StageSpan& span : spans) {
    GptSegment segment(w.config, span, source.seed, GptSegment::TiedHead::kNormOnly);
    for (const auto& item : segment.named_parameters()) {
      found[item.key()] = {item.value().detach(), "random init"};
    }
  }
  PW_RETURN_IF_ERROR(FillFields(fields, found, "random init"));
  FinishKeptBlocks(w, finish);
  return w;
}

// Reads `fields` (names as ModelFields gives them) from the directory.
Status FillFromHf(const WeightSource& source, const ModelConfig& config, std::vector<Field>& fields) {
  std::set<std::string> wanted;
  for (const Field& f : fields) wanted.insert(f.name);
  PW_ASSIGN_OR_RETURN(HfNamedTensors loaded, LoadHfParameters(source.hf_dir, config, [&](std::string_view name) {
                        return wanted.count(std::string(name)) > 0;
                      }));
  std::map<std::string, std::pair<at::Tensor, std::string>> found;
  for (auto& [name, t] : loaded) found[name] = {std::move(t), source.hf_dir};
  return FillFields(fields, found, source.hf_dir);
}

// The embedding and the head first, then one block at a time, each finished
// before the next is read: a real-size model is never held whole in fp32.
// Each read maps the files and unmaps them when done, so the pages read
// leave the process's resident memory with the block (the headers are
// parsed again per block: milliseconds against the block's copy).
Result<ModelWeights> LoadFromHf(const WeightSource& source, const std::vector<int>& keep_blocks, bool keep_all,
                                const LoadFinishers& finish) {
  ModelWeights w;
  w.config = source.config;
  PW_ASSIGN_OR_RETURN(std::vector<bool> keep, KeepMask(w.config, keep_blocks, keep_all));
  w.blocks.resize(w.config.n_layers);
  std::vector<Field> shared = ModelFields(w, std::vector<bool>(w.config.n_layers, false));
  PW_RETURN_IF_ERROR(FillFromHf(source, w.config, shared));
  FinishSharedParts(w, finish);
  for (int i = 0; i < w.config.n_layers; ++i) {
    if (!keep[i]) continue;
    std::vector<bool> only(w.config.n_layers, false);
    only[i] = true;
    std::vector<Field> fields = ModelFields(w, only);
    std::erase_if(fields, [](const Field& f) { return !f.name.starts_with("blocks."); });
    PW_RETURN_IF_ERROR(FillFromHf(source, w.config, fields));
    FinishBlock(w.blocks[i], w.config, finish);
  }
  return w;
}

}  // namespace

int64_t BlockParamCount(const ModelConfig& config) {
  BlockWeights scratch;
  int64_t count = 0;
  for (const Field& f : BlockFields(scratch, config)) {
    int64_t n = 1;
    for (int64_t s : f.shape) n *= s;
    count += n;
  }
  return count;
}

const char* LinearLayoutName(LinearLayout layout) {
  switch (layout) {
    case LinearLayout::kOneDnn: return "prepacked";
    case LinearLayout::kPanels: return "panels";
    case LinearLayout::kPlain: break;
  }
  return "plain";
}

const char* WeightFormatName(WeightFormat format) {
  switch (format) {
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kFp32: break;
  }
  return "fp32";
}

Result<WeightFormat> ParseWeightFormat(const std::string& name) {
  for (WeightFormat f : {WeightFormat::kFp32, WeightFormat::kBf16, WeightFormat::kInt8}) {
    if (name == WeightFormatName(f)) return f;
  }
  return Status::InvalidArgument("weight format '" + name + "': give fp32, bf16 or int8");
}

int64_t WeightFormatBytes(WeightFormat format) {
  switch (format) {
    case WeightFormat::kBf16: return 2;
    case WeightFormat::kInt8: return 1;
    case WeightFormat::kFp32: break;
  }
  return 4;
}

at::Tensor PackBlock(const BlockWeights& block, const ModelConfig& config) {
  PW_CHECK(block.defined(), "PackBlock of a block that is not held");
  if (block.flat.defined()) return block.flat;
  BlockWeights& b = const_cast<BlockWeights&>(block);  // fields are only read
  int64_t total = 0;
  const std::vector<Slot> slots = BlockSlots(b, config, block.format, &total);
  at::Tensor flat = at::zeros({total}, at::kByte);
  for (const Slot& slot : slots) {
    const at::Tensor t = slot.tensor->detach().contiguous();
    PW_CHECK(t.defined() && t.scalar_type() == slot.dtype && t.numel() * t.element_size() == slot.bytes,
             "PackBlock: a field does not match the block's format " + std::string(WeightFormatName(block.format)));
    std::memcpy(flat.data_ptr<uint8_t>() + slot.offset, t.data_ptr(), slot.bytes);
  }
  return flat;
}

int64_t BlockBytes(const ModelConfig& config, WeightFormat format) {
  BlockWeights scratch;
  int64_t total = 0;
  BlockSlots(scratch, config, format, &total);
  return total;
}

BlockWeights UnpackBlock(const at::Tensor& flat, const ModelConfig& config, LinearLayout layout,
                         WeightFormat format) {
  PW_CHECK(format == WeightFormat::kFp32 || layout == LinearLayout::kPanels,
           std::string("UnpackBlock: ") + WeightFormatName(format) + " weights are held in panels only");
  BlockWeights b;
  int64_t total = 0;
  const std::vector<Slot> slots = BlockSlots(b, config, format, &total);
  PW_CHECK(flat.defined() && flat.dim() == 1 && flat.scalar_type() == at::kByte && flat.is_contiguous() &&
               flat.numel() == total,
           "UnpackBlock: expected a contiguous 1-D uint8 tensor of " + std::to_string(total) + " bytes");
  for (const Slot& slot : slots) {
    at::Tensor view = flat.narrow(0, slot.offset, slot.bytes).view(slot.dtype);
    *slot.tensor = slot.linear && layout != LinearLayout::kPlain ? view : view.view(slot.shape);
  }
  b.layout = layout;
  b.format = format;
  b.flat = flat;
  b.spec = BlockSpecOf(config);
  return b;
}

int64_t ModelWeights::SharedBytes() const {
  const bool tied = lm_head.defined() && lm_head.is_same(tok_emb);
  return TensorBytes(tok_emb) + TensorBytes(pos_emb) + TensorBytes(head_ln_weight) +
         TensorBytes(head_ln_bias) + (tied ? 0 : TensorBytes(lm_head)) + TensorBytes(lm_head_scale);
}

int64_t ModelWeights::HeldBytes() const {
  int64_t bytes = SharedBytes();
  for (const BlockWeights& b : blocks) {
    if (b.flat.defined()) {  // every field is a view of it
      bytes += TensorBytes(b.flat);
      continue;
    }
    for (const at::Tensor* t : {&b.ln1_weight, &b.ln1_bias, &b.qkv_weight, &b.qkv_bias, &b.proj_weight,
                                &b.proj_bias, &b.ln2_weight, &b.ln2_bias, &b.fc_weight, &b.fc_bias,
                                &b.mlp_weight, &b.mlp_bias, &b.qkv_scale, &b.proj_scale, &b.fc_scale,
                                &b.mlp_scale}) {
      bytes += TensorBytes(*t);
    }
  }
  return bytes;
}

Result<ModelConfig> SourceConfig(const WeightSource& source) {
  if (source.checkpoint_dir.empty()) {  // a random init or a Hugging Face directory: config given
    PW_RETURN_IF_ERROR(ValidateModelConfig(source.config));
    return source.config;
  }
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadCheckpointManifest(source.checkpoint_dir));
  return ParseModelConfig(
      manifest.model_config,
      (std::filesystem::path(source.checkpoint_dir) / kCheckpointManifest).string());
}

Result<ModelWeights> LoadModelWeights(const WeightSource& source, const std::vector<int>& keep_blocks,
                                      bool keep_all, const LoadFinishers& finish) {
  try {
    if (!source.hf_dir.empty()) return LoadFromHf(source, keep_blocks, keep_all, finish);
    if (source.checkpoint_dir.empty()) return LoadFromInit(source, keep_blocks, keep_all, finish);
    return LoadFromCheckpoint(source.checkpoint_dir, keep_blocks, keep_all, finish);
  } catch (const c10::Error& e) {
    const std::string from = !source.hf_dir.empty()          ? source.hf_dir
                             : !source.checkpoint_dir.empty() ? source.checkpoint_dir
                                                              : std::string("random init");
    return Status::Internal("loading model weights from " + from + ": " + e.what_without_backtrace());
  }
}

std::vector<std::pair<std::string, at::Tensor>> NamedWeights(const ModelWeights& weights) {
  ModelWeights& w = const_cast<ModelWeights&>(weights);  // fields are only read
  std::vector<bool> keep(w.config.n_layers, false);
  for (int i = 0; i < w.config.n_layers && i < static_cast<int>(w.blocks.size()); ++i) {
    keep[i] = w.blocks[i].defined();
  }
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const Field& f : ModelFields(w, keep)) {
    if (f.tensor->defined()) out.emplace_back(f.name, *f.tensor);
  }
  return out;
}

Result<std::unique_ptr<GptSegment>> LoadWholeModel(const WeightSource& source) {
  PW_ASSIGN_OR_RETURN(ModelConfig config, SourceConfig(source));
  auto model = std::make_unique<GptSegment>(config, WholeModelSpan(config), source.seed);
  if (source.checkpoint_dir.empty() && source.hf_dir.empty()) return model;  // the same seeded init as the trainer's
  PW_ASSIGN_OR_RETURN(ModelWeights loaded, LoadModelWeights(source, {}, /*keep_all=*/true));
  std::map<std::string, at::Tensor> by_name;
  for (auto& [name, tensor] : NamedWeights(loaded)) by_name[name] = tensor;
  c10::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    auto it = by_name.find(item.key());
    if (it == by_name.end()) {
      return Status::InvalidArgument((source.hf_dir.empty() ? source.checkpoint_dir : source.hf_dir) + " lacks " +
                                     item.key());
    }
    item.value().detach().copy_(it->second);
  }
  return model;
}

at::Tensor RoundedToFormat(const at::Tensor& w_in, WeightFormat format) {
  switch (format) {
    case WeightFormat::kFp32: return w_in;
    case WeightFormat::kBf16: return w_in.to(at::kBFloat16).to(at::kFloat);  // c10::BFloat16: nearest even
    case WeightFormat::kInt8: break;
  }
  const at::Tensor w = w_in.detach().to(at::kFloat).contiguous();
  const int64_t out = w.size(0), in = w.size(1);
  std::vector<int8_t> packed(out * in);
  at::Tensor scales = at::empty({out}, at::kFloat);
  PackPanelsInt8(w.data_ptr<float>(), out, in, packed.data(), scales.data_ptr<float>());
  at::Tensor rounded = at::empty({out, in}, at::kFloat);
  for (int64_t o = 0; o < out; ++o) {
    PanelWeightRow(packed.data(), scales.data_ptr<float>(), out, in, o, rounded.data_ptr<float>() + o * in);
  }
  return rounded;
}

void RoundToFormat(GptSegment& model, WeightFormat format) {
  if (format == WeightFormat::kFp32) return;
  c10::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    at::Tensor p = item.value();
    const bool linear = name.ends_with("attn.qkv.weight") || name.ends_with("attn.proj.weight") ||
                        name.ends_with("mlp.fc.weight") || name.ends_with("mlp.proj.weight");
    const bool head = name == "head.lm_head.weight" || name == "head.tied_weight" ||
                      (name == "embed.tok_emb" && model.config().tie_embeddings);
    if (linear || head) {
      p.copy_(RoundedToFormat(p, format));
    } else if (name == "embed.tok_emb") {
      p.copy_(RoundedToFormat(p, WeightFormat::kBf16));
    }
  }
}

}  // namespace pw
