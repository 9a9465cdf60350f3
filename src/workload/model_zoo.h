// Transformer model descriptions: the built-in zoo (GPT-3, Bloom, BERT-huge, T5, Llama 3, Qwen3)
// and custom models read from small JSON files. Only shapes that change FLOPs, bytes or
// parameter counts are described.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::workload {

enum class Architecture {
  kDecoder,         // causal self-attention only (GPT, Bloom, Llama, Qwen)
  kEncoder,         // bidirectional self-attention only (BERT)
  kEncoderDecoder,  // encoder layers, then decoder layers with cross-attention (T5)
};

/// How token positions enter the model. Only kLearned has parameters (a default_seq_len × hidden
/// table added to the embeddings); rotary adds a memory-bound op on q and k; ALiBi and T5's
/// relative bias are applied inside the attention kernel (T5's 2 × 32 × heads bias table is
/// not counted).
enum class PositionEncoding { kLearned, kRotary, kAlibi, kRelative };

/// LayerNorm has a scale and a bias vector, RMSNorm only a scale.
enum class NormKind { kLayerNorm, kRmsNorm };

struct ModelSpec {
  std::string name;  // lower case, e.g. "gpt3-175b"
  Architecture architecture = Architecture::kDecoder;
  int num_layers = 0;          // all Transformer layers (encoder-decoder: encoder + decoder)
  int num_encoder_layers = 0;  // encoder-decoder only: the first num_encoder_layers are encoders
  int hidden_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // grouped-query attention; equals num_heads for multi-head attention
  int head_dim = 0;      // num_heads × head_dim may differ from hidden_size (T5-3B: 32 × 128)
  int ffn_hidden_size = 0;
  bool gated_mlp = false;       // SwiGLU: gate, up and down projections (3 GEMMs instead of 2)
  int vocab_size = 0;           // as published; Megatron pads it (see padded_vocab_size)
  int default_seq_len = 0;      // training sequence length; also the learned position table size
  bool tied_embeddings = true;  // output layer shares the input embedding matrix
  PositionEncoding position = PositionEncoding::kLearned;
  NormKind norm = NormKind::kLayerNorm;
  bool linear_bias = true;         // biases on QKV/output/MLP projections
  bool dropout = true;             // trained with dropout: masks are stored for backward
  bool embedding_norm = false;     // Bloom: LayerNorm right after the word embedding
  bool qk_norm = false;            // Qwen3: RMSNorm over each head of q and k
  bool lm_head_transform = false;  // BERT: dense h×h + GELU + LayerNorm (+ vocab bias) first
  bool final_norm = true;          // pre-norm models normalize the last hidden state; BERT doesn't
  int token_type_vocab = 0;        // BERT segment embeddings (rows of a table, no FLOPs)
  std::string source;              // where the numbers come from

  int num_decoder_layers() const {
    return architecture == Architecture::kEncoderDecoder ? num_layers - num_encoder_layers : 0;
  }
  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
};

/// Hard limits on custom models (untrusted JSON).
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxWidth = 1 << 20;  // hidden, ffn, head_dim
inline constexpr int kMaxHeads = 4096;
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxSeqLen = 1 << 22;
inline constexpr std::size_t kMaxModelJsonBytes = std::size_t{1} << 20;

std::string_view to_string(Architecture architecture);

/// All built-in models, in a fixed order (GPT-3, Bloom, BERT, T5, Llama, Qwen).
const std::vector<ModelSpec>& builtin_models();

/// Comma-separated names of the built-in models, for messages.
std::string builtin_model_names();

/// A built-in model by name or alias (case-insensitive; aliases are the Perseus/Merak names,
/// e.g. "gpt3-xl", "bert-huge-uncased"). Error: unknown name, listing every known name.
core::Result<ModelSpec> find_model(std::string_view name);

/// Checks a spec's internal consistency. Errors name `source` and the field: non-positive sizes,
/// sizes over the limits above, num_heads not a multiple of num_kv_heads, an encoder-decoder
/// without both encoder and decoder layers, encoder layers on a non-encoder-decoder model.
core::Status validate_model(const ModelSpec& spec, const std::string& source);

/// Parses a model from JSON text with the field names of ModelSpec (architecture: "decoder",
/// "encoder" or "encoder-decoder"; position: "learned", "rotary", "alibi", "relative"; norm:
/// "layernorm" or "rmsnorm"). Required: architecture, num_layers, hidden_size, num_heads,
/// ffn_hidden_size, vocab_size, default_seq_len (and num_encoder_layers for encoder-decoder).
/// Defaults: name = `source`'s file stem, num_kv_heads = num_heads, head_dim = hidden/heads
/// (then hidden must be a multiple of heads), booleans as in ModelSpec. Errors name `source` and
/// the field, e.g. "my.json: field 'hidden_size' must be a positive integer"; unknown fields are
/// errors (typos would otherwise be silently ignored); then validate_model.
core::Result<ModelSpec> parse_model_json(std::string_view text, const std::string& source);

/// Reads and parses a model JSON file (at most kMaxModelJsonBytes).
core::Result<ModelSpec> read_model_json(const std::string& path);

/// A built-in name, or a path ending in ".json" to a custom model.
core::Result<ModelSpec> resolve_model(std::string_view name_or_path);

/// Total trainable parameters as the reference implementation counts them (published vocab, not
/// padded; a tied output layer counted once). O(1).
double parameter_count(const ModelSpec& spec);

}  // namespace powertrain::workload
