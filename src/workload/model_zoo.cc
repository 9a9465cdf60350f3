// The built-in models, name lookup, consistency checks and parameter counts.
#include "workload/model_zoo.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace powertrain::workload {

using core::Error;

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The attention shape every model states: name, architecture, layers, width and heads.
ModelSpec transformer(std::string name, Architecture architecture, int layers, int hidden,
                      int heads, int kv_heads, int head_dim) {
  ModelSpec m;
  m.name = std::move(name);
  m.architecture = architecture;
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = head_dim;
  return m;
}

// GPT-3 as in Brown et al. 2020, Table 2.1: 2048-token context, GPT-2 BPE vocabulary of 50257,
// learned positions, LayerNorm, biases, dropout 0.1 (GPT-2/Megatron default), 4h MLP, tied
// embeddings. Head counts follow d_head = 128 (80 for 2.7B) where the table is inconsistent.
ModelSpec gpt3(std::string name, int layers, int hidden, int heads, std::string source) {
  ModelSpec m = transformer(std::move(name), Architecture::kDecoder, layers, hidden, heads, heads,
                            hidden / heads);
  m.ffn_hidden_size = 4 * hidden;
  m.vocab_size = 50257;
  m.default_seq_len = 2048;
  m.source = std::move(source);
  return m;
}

// BigScience Bloom (HF bigscience/bloom-* config.json): vocab 250880, ALiBi, LayerNorm after
// the word embedding, biases, hidden/attention dropout 0.0, 4h GELU MLP, tied, 2048 tokens.
ModelSpec bloom(std::string name, int layers, int hidden, int heads, std::string source) {
  ModelSpec m = gpt3(std::move(name), layers, hidden, heads, std::move(source));
  m.vocab_size = 250880;
  m.position = PositionEncoding::kAlibi;
  m.embedding_norm = true;
  m.dropout = false;
  return m;
}

// Llama 3 / Qwen3 family: SwiGLU, RMSNorm, rotary positions, no biases, no dropout, GQA.
ModelSpec llama_like(std::string name, int layers, int hidden, int heads, int kv_heads,
                     int head_dim, int ffn, int vocab, int seq_len, bool tied, std::string source) {
  ModelSpec m = transformer(std::move(name), Architecture::kDecoder, layers, hidden, heads,
                            kv_heads, head_dim);
  m.ffn_hidden_size = ffn;
  m.gated_mlp = true;
  m.vocab_size = vocab;
  m.default_seq_len = seq_len;
  m.tied_embeddings = tied;
  m.position = PositionEncoding::kRotary;
  m.norm = NormKind::kRmsNorm;
  m.linear_bias = false;
  m.dropout = false;
  m.source = std::move(source);
  return m;
}

std::vector<ModelSpec> make_builtin_models() {
  std::vector<ModelSpec> models;
  models.push_back(gpt3("gpt3-1.3b", 24, 2048, 16,
                        "Brown et al. 2020 Table 2.1 (GPT-3 XL; the table's 24 heads × 128 "
                        "!= 2048, so 16 heads of 128 as Perseus's Merak loader uses)"));
  models.push_back(gpt3("gpt3-2.7b", 32, 2560, 32, "Brown et al. 2020 Table 2.1"));
  models.push_back(gpt3("gpt3-6.7b", 32, 4096, 32, "Brown et al. 2020 Table 2.1"));
  models.push_back(gpt3("gpt3-13b", 40, 5120, 40,
                        "Brown et al. 2020 Table 2.1 (prints d_model 5140; 40 heads × 128 = "
                        "5120, as Megatron and Perseus use)"));
  models.push_back(gpt3("gpt3-175b", 96, 12288, 96, "Brown et al. 2020 Table 2.1"));

  models.push_back(bloom("bloom-3b", 30, 2560, 32, "HF bigscience/bloom-3b config.json"));
  models.push_back(bloom("bloom-7b1", 30, 4096, 32, "HF bigscience/bloom-7b1 config.json"));
  models.push_back(bloom("bloom-176b", 70, 14336, 112, "HF bigscience/bloom config.json"));

  {
    // Perseus App. B.4 and its Merak loader: bert-large-uncased with hidden 2048 and
    // intermediate 8192 (24 layers, 16 heads kept), 1276.40 M parameters; BertForMaskedLM
    // (no pooler), 512 positions, vocab 30522, 2 token types, post-LayerNorm, dropout 0.1.
    ModelSpec m = gpt3("bert-huge-1.3b", 24, 2048, 16, "");
    m.architecture = Architecture::kEncoder;
    m.vocab_size = 30522;
    m.default_seq_len = 512;
    m.embedding_norm = true;
    m.final_norm = false;
    m.lm_head_transform = true;
    m.token_type_vocab = 2;
    m.source = "Perseus App. B.4 / Merak bert-huge-uncased (bert-large-uncased, hidden 2048)";
    models.push_back(std::move(m));
  }
  {
    // HF t5-3b config.json: d_model 1024, d_ff 16384, 32 heads of d_kv 128, 24 + 24 layers,
    // vocab 32128, ReLU MLP, RMS-style T5LayerNorm, no biases, relative position bias,
    // dropout 0.1, shared (tied) embeddings. Sequence length 512 as T5 pre-training.
    ModelSpec m = transformer("t5-3b", Architecture::kEncoderDecoder, 48, 1024, 32, 32, 128);
    m.num_encoder_layers = 24;
    m.ffn_hidden_size = 16384;
    m.vocab_size = 32128;
    m.default_seq_len = 512;
    m.position = PositionEncoding::kRelative;
    m.norm = NormKind::kRmsNorm;
    m.linear_bias = false;
    m.source = "HF t5-3b config.json";
    models.push_back(std::move(m));
  }
  // HF meta-llama/Llama-3.2-3B config.json; 8192-token pre-training context (Llama 3 paper).
  models.push_back(llama_like("llama3.2-3b", 28, 3072, 24, 8, 128, 8192, 128256, 8192, true,
                              "HF meta-llama/Llama-3.2-3B config.json"));
  // HF meta-llama/Llama-3.3-70B-Instruct config.json (untied output layer).
  models.push_back(llama_like("llama3.3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 8192, false,
                              "HF meta-llama/Llama-3.3-70B-Instruct config.json"));
  {
    // HF Qwen/Qwen3-1.7B config.json: q/k RMSNorm per head, tied; 4096-token pre-training
    // sequences (Qwen3 technical report, general stage).
    ModelSpec m = llama_like("qwen3-1.7b", 28, 2048, 16, 8, 128, 6144, 151936, 4096, true,
                             "HF Qwen/Qwen3-1.7B config.json");
    m.qk_norm = true;
    models.push_back(std::move(m));
  }
  return models;
}

// Perseus/Merak model names for the same configurations.
const std::pair<const char*, const char*> kAliases[] = {
    {"gpt3-xl", "gpt3-1.3b"},          {"bert-huge-uncased", "bert-huge-1.3b"},
    {"bloom", "bloom-176b"},           {"llama-3.2-3b", "llama3.2-3b"},
    {"llama-3.3-70b", "llama3.3-70b"},
};

}  // namespace

std::string_view to_string(Architecture architecture) {
  switch (architecture) {
    case Architecture::kDecoder:
      return "decoder";
    case Architecture::kEncoder:
      return "encoder";
    case Architecture::kEncoderDecoder:
      return "encoder-decoder";
  }
  return "?";
}

const std::vector<ModelSpec>& builtin_models() {
  static const std::vector<ModelSpec> models = make_builtin_models();
  return models;
}

std::string builtin_model_names() {
  std::string names;
  for (const ModelSpec& m : builtin_models()) {
    if (!names.empty()) names += ", ";
    names += m.name;
  }
  return names;
}

core::Result<ModelSpec> find_model(std::string_view name) {
  std::string key = lower(name);
  for (const auto& [alias, target] : kAliases) {
    if (key == alias) key = target;
  }
  for (const ModelSpec& m : builtin_models()) {
    if (m.name == key) return m;
  }
  return Error{fmt::format("unknown model '{}'; known models: {} (or a path to a .json model)",
                           name.substr(0, 80), builtin_model_names())};
}

core::Result<ModelSpec> resolve_model(std::string_view name_or_path) {
  if (name_or_path.size() > 5 && lower(name_or_path.substr(name_or_path.size() - 5)) == ".json") {
    return read_model_json(std::string(name_or_path));
  }
  return find_model(name_or_path);
}

core::Status validate_model(const ModelSpec& m, const std::string& source) {
  auto bad = [&](std::string_view field, std::string_view what) {
    return Error{fmt::format("{}: field '{}' {}", source, field, what)};
  };
  const std::pair<const char*, std::pair<int, int>> sized[] = {
      {"num_layers", {m.num_layers, kMaxLayers}},
      {"hidden_size", {m.hidden_size, kMaxWidth}},
      {"num_heads", {m.num_heads, kMaxHeads}},
      {"num_kv_heads", {m.num_kv_heads, kMaxHeads}},
      {"head_dim", {m.head_dim, kMaxWidth}},
      {"ffn_hidden_size", {m.ffn_hidden_size, kMaxWidth}},
      {"vocab_size", {m.vocab_size, kMaxVocab}},
      {"default_seq_len", {m.default_seq_len, kMaxSeqLen}},
  };
  for (const auto& [field, value_max] : sized) {
    if (value_max.first <= 0) return bad(field, "must be a positive integer");
    if (value_max.first > value_max.second) {
      return bad(field,
                 fmt::format("must be at most {}, got {}", value_max.second, value_max.first));
    }
  }
  if (m.num_heads % m.num_kv_heads != 0) {
    return bad("num_kv_heads",
               fmt::format("must divide num_heads = {}, got {}", m.num_heads, m.num_kv_heads));
  }
  if (m.token_type_vocab < 0 || m.token_type_vocab > kMaxVocab) {
    return bad("token_type_vocab", "must be between 0 and 2^24");
  }
  if (m.architecture == Architecture::kEncoderDecoder) {
    if (m.num_encoder_layers <= 0 || m.num_encoder_layers >= m.num_layers) {
      return bad("num_encoder_layers",
                 fmt::format("must be between 1 and num_layers - 1 = {} for an encoder-decoder "
                             "model, got {}",
                             m.num_layers - 1, m.num_encoder_layers));
    }
  } else if (m.num_encoder_layers != 0) {
    return bad("num_encoder_layers",
               fmt::format("is only meaningful for encoder-decoder models, not a {} model",
                           to_string(m.architecture)));
  }
  return core::Ok{};
}

double parameter_count(const ModelSpec& m) {
  const double h = m.hidden_size;
  const double q = m.q_dim();
  const double kv = m.kv_dim();
  const double f = m.ffn_hidden_size;
  const double v = m.vocab_size;
  const double bias = m.linear_bias ? 1.0 : 0.0;
  const double norm = m.norm == NormKind::kLayerNorm ? 2.0 * h : h;

  const double attention = 2.0 * h * q + 2.0 * h * kv + bias * (q + 2.0 * kv + h) + norm +
                           (m.qk_norm ? 2.0 * m.head_dim : 0.0);
  const double mlp_matrices = m.gated_mlp ? 3.0 : 2.0;
  const double mlp = mlp_matrices * h * f + bias * ((m.gated_mlp ? 2.0 : 1.0) * f + h) + norm;
  // Decoders of encoder-decoder models add cross-attention (same shapes as self-attention).
  const double cross = m.num_decoder_layers() * attention;
  double total = m.num_layers * (attention + mlp) + cross;

  total += v * h + m.token_type_vocab * h;
  if (m.position == PositionEncoding::kLearned) total += double(m.default_seq_len) * h;
  // T5: 32 relative-position buckets per head, in the first encoder and first decoder layer.
  if (m.position == PositionEncoding::kRelative) {
    total += 32.0 * m.num_heads * (m.architecture == Architecture::kEncoderDecoder ? 2 : 1);
  }
  if (m.embedding_norm) total += norm;
  if (m.final_norm) {
    total += norm * (m.architecture == Architecture::kEncoderDecoder ? 2 : 1);
  }
  if (m.lm_head_transform) total += h * h + h + norm + v;  // dense + LayerNorm + vocab bias
  if (!m.tied_embeddings) total += v * h;
  return total;
}

}  // namespace powertrain::workload
