#include "model/hf_checkpoint.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "core/file_io.h"
#include "model/hf_config.h"
#include "model/safetensors.h"
#include "model/safetensors_header.h"
#include "os/atomic_file.h"
#include "os/mapped_region.h"

namespace pw {
namespace {

namespace fs = std::filesystem;

// Where one pipewright parameter comes from: Hugging Face tensors stacked on
// dim 0 (q, k, v; gate, up), each transposed first when `transpose` (GPT-2's
// Conv1D keeps [in, out]); `shape` is the parameter's, `part_rows` each
// stacked part's rows (empty: one part, the whole parameter).
struct Source {
  std::string name;                // pipewright's
  std::vector<std::string> parts;  // Hugging Face's
  std::vector<int64_t> shape;
  bool transpose = false;
  std::vector<int64_t> part_rows;
  // A learned position table: a context capped below the file's
  // (model.seq_len) reads its first rows.
  bool rows_may_shrink = false;
};

void AddBlockSources(const ModelConfig& c, const std::string& type, const std::string& gpt2_prefix, int i,
                     std::vector<Source>& out) {
  const int64_t d = c.d_model, h = c.ffn_width(), kv = c.kv_width(), qkv = c.qkv_width();
  const std::vector<int64_t> qkv_rows = {d, kv, kv}, gate_up_rows = {h, h};
  const std::string ours = "blocks." + std::to_string(i) + ".";
  if (type == "gpt2") {
    const std::string hf = gpt2_prefix + "h." + std::to_string(i) + ".";
    for (const char* ln : {"1", "2"}) {
      for (const char* part : {"weight", "bias"}) {
        out.push_back({ours + "ln" + ln + "." + part, {hf + "ln_" + ln + "." + part}, {d}});
      }
    }
    out.push_back({ours + "attn.qkv.weight", {hf + "attn.c_attn.weight"}, {qkv, d}, true});
    out.push_back({ours + "attn.qkv.bias", {hf + "attn.c_attn.bias"}, {qkv}});
    out.push_back({ours + "attn.proj.weight", {hf + "attn.c_proj.weight"}, {d, d}, true});
    out.push_back({ours + "attn.proj.bias", {hf + "attn.c_proj.bias"}, {d}});
    out.push_back({ours + "mlp.fc.weight", {hf + "mlp.c_fc.weight"}, {h, d}, true});
    out.push_back({ours + "mlp.fc.bias", {hf + "mlp.c_fc.bias"}, {h}});
    out.push_back({ours + "mlp.proj.weight", {hf + "mlp.c_proj.weight"}, {d, h}, true});
    out.push_back({ours + "mlp.proj.bias", {hf + "mlp.c_proj.bias"}, {d}});
    return;
  }
  const std::string hf = "model.layers." + std::to_string(i) + ".";
  const std::string attn = hf + "self_attn.";
  out.push_back({ours + "ln1.weight", {hf + "input_layernorm.weight"}, {d}});
  out.push_back({ours + "attn.qkv.weight", {attn + "q_proj.weight", attn + "k_proj.weight", attn + "v_proj.weight"},
                 {qkv, d}, false, qkv_rows});
  if (c.qkv_bias) {
    out.push_back({ours + "attn.qkv.bias", {attn + "q_proj.bias", attn + "k_proj.bias", attn + "v_proj.bias"}, {qkv},
                   false, qkv_rows});
  }
  out.push_back({ours + "attn.proj.weight", {attn + "o_proj.weight"}, {d, d}});
  out.push_back({ours + "ln2.weight", {hf + "post_attention_layernorm.weight"}, {d}});
  out.push_back({ours + "mlp.fc.weight", {hf + "mlp.gate_proj.weight", hf + "mlp.up_proj.weight"}, {2 * h, d}, false,
                 gate_up_rows});
  out.push_back({ours + "mlp.proj.weight", {hf + "mlp.down_proj.weight"}, {d, h}});
}

// Every parameter of the model and its sources, in model order.
std::vector<Source> ParameterSources(const ModelConfig& c, const std::string& type, const std::string& gpt2_prefix) {
  const int64_t d = c.d_model, v = c.vocab_size;
  std::vector<Source> out;
  const std::string p = gpt2_prefix;
  out.push_back({"embed.tok_emb", {type == "gpt2" ? p + "wte.weight" : "model.embed_tokens.weight"}, {v, d}});
  if (type == "gpt2") out.push_back({"embed.pos_emb", {p + "wpe.weight"}, {c.seq_len, d}, false, {}, true});
  for (int i = 0; i < c.n_layers; ++i) AddBlockSources(c, type, gpt2_prefix, i, out);
  if (type == "gpt2") {
    out.push_back({"head.ln.weight", {p + "ln_f.weight"}, {d}});
    out.push_back({"head.ln.bias", {p + "ln_f.bias"}, {d}});
  } else {
    out.push_back({"head.ln.weight", {"model.norm.weight"}, {d}});
  }
  if (!c.tie_embeddings) out.push_back({"head.lm_head.weight", {"lm_head.weight"}, {v, d}});
  return out;
}

std::string ShapeText(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The weight files of a directory: which file holds which tensor, each
// file mapped and its header parsed on first use.
class WeightFiles {
 public:
  static Result<WeightFiles> Open(const std::string& dir) {
    WeightFiles w;
    w.dir_ = dir;
    const fs::path index = fs::path(dir) / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::is_regular_file(index, ec)) {
      PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index.string()));
      nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
        return Status::InvalidArgument(index.string() + ": not a safetensors index (want {\"weight_map\": {...}})");
      }
      for (const auto& [name, file] : j["weight_map"].items()) {
        if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos) {
          return Status::InvalidArgument(index.string() + ": weight_map[\"" + name + "\"] is not a file name");
        }
        w.file_of_[name] = file.get<std::string>();
      }
      return w;
    }
    if (!fs::is_regular_file(fs::path(dir) / "model.safetensors", ec)) {
      return Status::NotFound(dir + " has no model.safetensors or model.safetensors.index.json");
    }
    w.single_ = "model.safetensors";
    return w;
  }

  // Whether some file holds `name`.
  bool Has(const std::string& name) {
    if (!single_.empty()) {
      Result<File*> f = FileNamed(single_);
      return f.ok() && (*f)->entries.count(name) > 0;
    }
    return file_of_.count(name) > 0;
  }

  // The element type of the first tensor of the first file.
  Result<at::ScalarType> FirstDtype() {
    const std::string file = !single_.empty() ? single_ : file_of_.empty() ? "" : file_of_.begin()->second;
    if (file.empty()) return Status::NotFound(dir_ + ": the index's weight_map is empty");
    PW_ASSIGN_OR_RETURN(File * f, FileNamed(file));
    if (f->header.entries.empty()) return Status::InvalidArgument(f->path + " holds no tensor");
    return SafetensorsScalarType(f->header.entries.front().dtype);
  }

  // The tensor `name` as fp32, copied out of its file.
  Result<at::Tensor> Read(const std::string& name) {
    const std::string file = single_.empty() ? Lookup(name) : single_;
    if (file.empty()) return Status::NotFound(dir_ + ": no tensor '" + name + "' in the index's weight_map");
    PW_ASSIGN_OR_RETURN(File * f, FileNamed(file));
    auto it = f->entries.find(name);
    if (it == f->entries.end()) return Status::NotFound(f->path + ": no tensor '" + name + "'");
    const SafetensorsEntry& e = it->second;
    if (e.dtype == SafetensorsDtype::kI64) {
      return Status::InvalidArgument(f->path + ": tensor '" + name + "' is I64; weights are F32, F16 or BF16");
    }
    // A copy into an aligned buffer of the file's type (the mapping's
    // offsets need not be aligned), then fp32.
    at::Tensor raw = at::empty(e.shape, at::TensorOptions().dtype(SafetensorsScalarType(e.dtype)));
    const char* data = static_cast<const char*>(f->region.data()) + f->header.data_start + e.begin;
    if (e.end > e.begin) std::memcpy(raw.data_ptr(), data, e.end - e.begin);
    return raw.to(at::kFloat);
  }

 private:
  struct File {
    std::string path;
    MappedRegion region;
    SafetensorsHeader header;
    std::map<std::string, SafetensorsEntry> entries;
  };

  std::string Lookup(const std::string& name) const {
    auto it = file_of_.find(name);
    return it == file_of_.end() ? "" : it->second;
  }

  Result<File*> FileNamed(const std::string& file) {
    auto it = files_.find(file);
    if (it != files_.end()) return it->second.get();
    auto f = std::make_unique<File>();
    f->path = (fs::path(dir_) / file).string();
    Result<MappedRegion> region = MappedRegion::ReadOnlyFile(f->path);
    if (!region.ok()) {
      if (region.status().code() == StatusCode::kNotFound && single_.empty()) {
        return Status::NotFound(f->path + " is missing: model.safetensors.index.json names it (a shard not "
                                "downloaded?)");
      }
      return region.status();
    }
    f->region = std::move(*region);
    const std::string_view bytes(static_cast<const char*>(f->region.data()), f->region.size());
    PW_ASSIGN_OR_RETURN(f->header, ParseSafetensorsHeader(bytes, f->path));
    for (const SafetensorsEntry& e : f->header.entries) f->entries[e.name] = e;
    File* raw = f.get();
    files_[file] = std::move(f);
    return raw;
  }

  std::string dir_;
  std::string single_;                          // the one file, when there is no index
  std::map<std::string, std::string> file_of_;  // the index's weight_map
  std::map<std::string, std::unique_ptr<File>> files_;
};

// "transformer." when the GPT-2 file names its tensors that way.
std::string Gpt2Prefix(WeightFiles& files) { return files.Has("transformer.wte.weight") ? "transformer." : ""; }

}  // namespace

Result<HfNamedTensors> LoadHfParameters(const std::string& dir, const ModelConfig& config,
                                        const std::function<bool(std::string_view name)>& wanted) {
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(config));
  PW_ASSIGN_OR_RETURN(WeightFiles files, WeightFiles::Open(dir));
  const std::string prefix = type == "gpt2" ? Gpt2Prefix(files) : "";
  HfNamedTensors out;
  try {
    for (const Source& s : ParameterSources(config, type, prefix)) {
      if (!wanted(s.name)) continue;
      std::vector<at::Tensor> parts;
      for (const std::string& part : s.parts) {
        PW_ASSIGN_OR_RETURN(at::Tensor t, files.Read(part));
        parts.push_back(s.transpose ? t.t() : t);
      }
      at::Tensor t = parts.size() == 1 ? parts[0].contiguous() : at::cat(parts, 0);
      if (s.rows_may_shrink && t.dim() == 2 && t.size(0) > s.shape[0] && t.size(1) == s.shape[1]) {
        t = t.narrow(0, 0, s.shape[0]).contiguous();  // positions past the capped context are never used
      }
      if (t.sizes() != at::IntArrayRef(s.shape)) {
        std::string from;
        for (const std::string& part : s.parts) from += (from.empty() ? "" : " + ") + part;
        std::string hint;
        if (s.rows_may_shrink && t.dim() == 2 && t.size(0) < s.shape[0]) {
          hint = "; a learned position table cannot grow: give model.seq_len <= " + std::to_string(t.size(0));
        }
        return Status::InvalidArgument(dir + ": " + from + " gives " + s.name + " the shape " + ShapeText(t.sizes()) +
                                       ", but the model config (config.json with any --set) makes it " +
                                       ShapeText(s.shape) + hint);
      }
      out.emplace_back(s.name, std::move(t));
    }
  } catch (const c10::Error& e) {
    return Status::InvalidArgument(dir + ": " + e.what_without_backtrace());
  }
  return out;
}

Result<at::ScalarType> HfStoredDtype(const std::string& dir) {
  PW_ASSIGN_OR_RETURN(WeightFiles files, WeightFiles::Open(dir));
  return files.FirstDtype();
}

Status InitFromHfModel(const std::string& dir, const ModelConfig& config, const HfNamedTensors& params) {
  std::map<std::string, at::Tensor> targets(params.begin(), params.end());
  // A head stage's copy of a tied embedding (model/gpt.h) reads the
  // embedding's tensor: the file holds it once.
  constexpr const char* kTiedCopy = "head.tied_weight";
  if (auto copy = targets.find(kTiedCopy); copy != targets.end() && targets.count("embed.tok_emb") == 0) {
    targets.emplace("embed.tok_emb", copy->second);
    targets.erase(copy);
  }
  PW_ASSIGN_OR_RETURN(HfNamedTensors loaded, LoadHfParameters(dir, config, [&](std::string_view name) {
                        return targets.count(std::string(name)) > 0;
                      }));
  if (loaded.size() != targets.size()) {
    return Status::InvalidArgument(dir + ": the model gives " + std::to_string(loaded.size()) + " of this stage's " +
                                   std::to_string(targets.size()) + " parameters; is config.json the one of these "
                                   "weights?");
  }
  c10::NoGradGuard no_grad;
  for (const auto& [name, t] : loaded) targets.at(name).copy_(t);
  return Status::Ok();
}

Status ExportHfModel(const std::string& dir, const ModelConfig& config, const HfNamedTensors& params,
                     const std::string& dtype) {
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(config));
  at::ScalarType scalar = at::kFloat;
  if (dtype == "F16") scalar = at::kHalf;
  else if (dtype == "BF16") scalar = at::kBFloat16;
  else if (dtype != "F32") return Status::InvalidArgument("export dtype '" + dtype + "': use F32, F16 or BF16");
  PW_ASSIGN_OR_RETURN(std::string config_json,
                      FormatHfConfig(config, scalar == at::kHalf ? "float16" : scalar == at::kBFloat16 ? "bfloat16" : "float32"));
  std::map<std::string, at::Tensor> by_name(params.begin(), params.end());
  HfNamedTensors tensors;
  for (const Source& s : ParameterSources(config, type, "")) {
    auto it = by_name.find(s.name);
    if (it == by_name.end()) return Status::InvalidArgument("export: the model has no parameter " + s.name);
    const at::Tensor& t = it->second;
    if (t.sizes() != at::IntArrayRef(s.shape)) {
      return Status::InvalidArgument("export: " + s.name + " has the shape " + ShapeText(t.sizes()) + ", not " +
                                     ShapeText(s.shape));
    }
    // Split stacked parts back (q | k | v, gate | up) in their row counts.
    std::vector<at::Tensor> pieces = s.part_rows.empty() ? std::vector<at::Tensor>{t} : t.split_with_sizes(s.part_rows, 0);
    for (size_t i = 0; i < s.parts.size(); ++i) {
      at::Tensor piece = s.transpose ? pieces[i].t() : pieces[i];
      tensors.emplace_back(s.parts[i], piece.detach().to(scalar).contiguous());
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  PW_RETURN_IF_ERROR(WriteSafetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}}));
  return WriteFile((fs::path(dir) / "config.json").string(), config_json, Durability::kDurable);
}

Status KeepHfSourceFacts(const std::string& dir, const std::string& source, const ModelConfig& config) {
  const fs::path from(source), to(dir);
  std::error_code ec;
  if (source.empty() || !fs::is_directory(from, ec)) return Status::Ok();
  if (fs::is_regular_file(from / "config.json", ec)) {
    PW_ASSIGN_OR_RETURN(std::string source_text, ReadTextFile((from / "config.json").string()));
    PW_ASSIGN_OR_RETURN(std::string ours_text, ReadTextFile((to / "config.json").string()));
    const nlohmann::json src = nlohmann::json::parse(source_text, nullptr, /*allow_exceptions=*/false);
    nlohmann::json ours = nlohmann::json::parse(ours_text, nullptr, /*allow_exceptions=*/false);
    if (!src.is_object()) return Status::InvalidArgument((from / "config.json").string() + " is not a JSON object");
    if (!ours.is_object()) return Status::Internal((to / "config.json").string() + " is not a JSON object");
    for (const char* key : {"bos_token_id", "eos_token_id"}) {
      if (src.contains(key) && !src[key].is_null()) ours[key] = src[key];
    }
    if (config.rope() && src.contains("max_position_embeddings") && src["max_position_embeddings"].is_number_integer() &&
        src["max_position_embeddings"].get<int64_t>() > config.seq_len) {
      ours["max_position_embeddings"] = src["max_position_embeddings"];
    }
    // A Mistral source stays Mistral: its sliding window bounds attention
    // past the context pipewright trained (hf_config.cc caps it there).
    if (src.value("model_type", std::string()) == "mistral") {
      ours["model_type"] = "mistral";
      ours["architectures"] = nlohmann::json::array({"MistralForCausalLM"});
      if (src.contains("sliding_window")) ours["sliding_window"] = src["sliding_window"];
    }
    PW_RETURN_IF_ERROR(WriteFile((to / "config.json").string(), ours.dump(2) + "\n", Durability::kDurable));
  }
  // Every other file carried (the tokenizer's and generation_config.json):
  // as the source had it.
  for (const fs::directory_entry& entry : fs::directory_iterator(from, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || !entry.is_regular_file(ec)) continue;
    PW_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(entry.path().string()));
    PW_RETURN_IF_ERROR(WriteFile((to / name).string(), bytes, Durability::kDurable));
  }
  if (ec) return Status::IoError("reading " + from.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace pw
