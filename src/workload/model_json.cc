// Custom models from small JSON files; every error names the file and the field.
#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/csv.h"
#include "workload/model_zoo.h"

namespace powertrain::workload {

using core::Error;
using nlohmann::json;

namespace {

class FieldReader {
 public:
  FieldReader(const json& object, const std::string& source) : object_(object), source_(source) {}

  Error error(std::string_view field, std::string_view what) const {
    return Error{fmt::format("{}: field '{}' {}", source_, field, what)};
  }

  // A positive integer; nullopt when absent and not required.
  core::Result<std::optional<int>> positive(const char* field, bool required) const {
    auto it = object_.find(field);
    if (it == object_.end()) {
      if (required) return error(field, "is missing (a positive integer is required)");
      return std::optional<int>{};
    }
    if (!it->is_number_integer() || it->get<long long>() <= 0) {
      return error(field, fmt::format("must be a positive integer, got {}", brief(*it)));
    }
    if (it->get<long long>() > kMaxWidth * 16LL) {
      return error(field, fmt::format("is too large: {}", brief(*it)));
    }
    return std::optional<int>{static_cast<int>(it->get<long long>())};
  }

  core::Result<bool> boolean(const char* field, bool fallback) const {
    auto it = object_.find(field);
    if (it == object_.end()) return fallback;
    if (!it->is_boolean()) {
      return error(field, fmt::format("must be true or false, got {}", brief(*it)));
    }
    return it->get<bool>();
  }

  // One of `choices` (by name); fallback when absent.
  template <typename E>
  core::Result<E> choice(const char* field, const std::map<std::string, E>& choices,
                         std::optional<E> fallback) const {
    auto it = object_.find(field);
    std::string names;
    for (const auto& [name, value] : choices) names += (names.empty() ? "" : ", ") + name;
    if (it == object_.end()) {
      if (fallback) return *fallback;
      return error(field, fmt::format("is missing (expected one of {})", names));
    }
    if (it->is_string()) {
      auto found = choices.find(it->get<std::string>());
      if (found != choices.end()) return found->second;
    }
    return error(field, fmt::format("must be one of {}, got {}", names, brief(*it)));
  }

  static std::string brief(const json& value) {
    std::string text = value.dump();
    return text.size() > 40 ? text.substr(0, 40) + "..." : text;
  }

 private:
  const json& object_;
  const std::string& source_;
};

const char* const kKnownFields[] = {"name",
                                    "architecture",
                                    "num_layers",
                                    "num_encoder_layers",
                                    "hidden_size",
                                    "num_heads",
                                    "num_kv_heads",
                                    "head_dim",
                                    "ffn_hidden_size",
                                    "gated_mlp",
                                    "vocab_size",
                                    "default_seq_len",
                                    "tied_embeddings",
                                    "position",
                                    "norm",
                                    "linear_bias",
                                    "dropout",
                                    "embedding_norm",
                                    "qk_norm",
                                    "lm_head_transform",
                                    "final_norm",
                                    "token_type_vocab",
                                    "source"};

// The document as one flat JSON object of known fields; size and depth are limited first.
core::Result<json> parse_flat_object(std::string_view text, const std::string& source) {
  if (text.size() > kMaxModelJsonBytes) {
    return Error{fmt::format("{}: model file is larger than {} bytes", source, kMaxModelJsonBytes)};
  }
  json doc;
  // A model is one flat object; deeper nesting is refused before it costs memory or stack.
  constexpr int kMaxDepth = 4;
  bool too_deep = false;
  auto limit_depth = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) too_deep = true;
    return depth <= kMaxDepth;
  };
  try {
    doc = json::parse(text, limit_depth);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for numbers beyond double (e.g. 1e852). nlohmann's message
    // carries the byte position; drop its "[json.exception...]" prefix.
    std::string what = e.what();
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return Error{fmt::format("{}: invalid JSON: {}", source, what)};
  }
  if (too_deep) {
    return Error{fmt::format("{}: JSON nested deeper than {} levels", source, kMaxDepth)};
  }
  if (!doc.is_object()) {
    return Error{fmt::format("{}: expected a JSON object with model fields, got {}", source,
                             FieldReader::brief(doc))};
  }
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (const char* field : kKnownFields) known = known || key == field;
    if (!known) {
      return Error{
          fmt::format("{}: unknown field '{}' (fields are those of ModelSpec, see "
                      "docs/workload.md)",
                      source, key.substr(0, 40))};
    }
  }
  return doc;
}

// name (default: the file's stem) and source (default: the path).
core::Status read_names(const json& doc, const FieldReader& r, ModelSpec& m) {
  for (const char* field : {"name", "source"}) {
    if (auto it = doc.find(field); it != doc.end()) {
      if (!it->is_string() || it->get<std::string>().empty() ||
          it->get<std::string>().size() > 200) {
        return r.error(field, "must be a non-empty string of at most 200 characters");
      }
      (std::string_view(field) == "name" ? m.name : m.source) = it->get<std::string>();
    }
  }
  return core::Ok{};
}

// The architecture and the sizes: layers, widths, heads (head_dim derived when absent).
core::Status read_shape(const FieldReader& r, ModelSpec& m) {
  auto arch = r.choice<Architecture>("architecture",
                                     {{"decoder", Architecture::kDecoder},
                                      {"encoder", Architecture::kEncoder},
                                      {"encoder-decoder", Architecture::kEncoderDecoder}},
                                     std::nullopt);
  if (!arch) return arch.error();
  m.architecture = *arch;

  struct IntField {
    const char* name;
    int* target;
    bool required;
  };
  const IntField ints[] = {
      {"num_layers", &m.num_layers, true},
      {"num_encoder_layers", &m.num_encoder_layers,
       m.architecture == Architecture::kEncoderDecoder},
      {"hidden_size", &m.hidden_size, true},
      {"num_heads", &m.num_heads, true},
      {"num_kv_heads", &m.num_kv_heads, false},
      {"head_dim", &m.head_dim, false},
      {"ffn_hidden_size", &m.ffn_hidden_size, true},
      {"vocab_size", &m.vocab_size, true},
      {"default_seq_len", &m.default_seq_len, true},
      {"token_type_vocab", &m.token_type_vocab, false},
  };
  for (const IntField& field : ints) {
    auto value = r.positive(field.name, field.required);
    if (!value) return value.error();
    if (*value) *field.target = **value;
  }
  if (m.num_kv_heads == 0) m.num_kv_heads = m.num_heads;
  if (m.head_dim == 0) {
    if (m.hidden_size % m.num_heads != 0) {
      return r.error("head_dim",
                     fmt::format("is missing and hidden_size {} is not a multiple of num_heads {}",
                                 m.hidden_size, m.num_heads));
    }
    m.head_dim = m.hidden_size / m.num_heads;
  }
  return core::Ok{};
}

// The switches: gated MLP, tied embeddings, biases, norms, position encoding.
core::Status read_features(const FieldReader& r, ModelSpec& m) {
  struct BoolField {
    const char* name;
    bool* target;
  };
  const BoolField bools[] = {
      {"gated_mlp", &m.gated_mlp},
      {"tied_embeddings", &m.tied_embeddings},
      {"linear_bias", &m.linear_bias},
      {"dropout", &m.dropout},
      {"embedding_norm", &m.embedding_norm},
      {"qk_norm", &m.qk_norm},
      {"lm_head_transform", &m.lm_head_transform},
      {"final_norm", &m.final_norm},
  };
  for (const BoolField& field : bools) {
    auto value = r.boolean(field.name, *field.target);
    if (!value) return value.error();
    *field.target = *value;
  }
  auto position = r.choice<PositionEncoding>("position",
                                             {{"learned", PositionEncoding::kLearned},
                                              {"rotary", PositionEncoding::kRotary},
                                              {"alibi", PositionEncoding::kAlibi},
                                              {"relative", PositionEncoding::kRelative}},
                                             PositionEncoding::kLearned);
  if (!position) return position.error();
  m.position = *position;
  auto norm = r.choice<NormKind>(
      "norm", {{"layernorm", NormKind::kLayerNorm}, {"rmsnorm", NormKind::kRmsNorm}},
      NormKind::kLayerNorm);
  if (!norm) return norm.error();
  m.norm = *norm;
  return core::Ok{};
}

}  // namespace

core::Result<ModelSpec> parse_model_json(std::string_view text, const std::string& source) {
  auto doc = parse_flat_object(text, source);
  if (!doc) return doc.error();
  FieldReader r(*doc, source);
  ModelSpec m;
  m.source = source;
  m.name = std::filesystem::path(source).stem().string();
  if (auto names = read_names(*doc, r, m); !names) return names.error();
  if (auto shape = read_shape(r, m); !shape) return shape.error();
  if (auto features = read_features(r, m); !features) return features.error();
  core::Status valid = validate_model(m, source);
  if (!valid) return valid.error();
  return m;
}

core::Result<ModelSpec> read_model_json(const std::string& path) {
  auto text = core::read_text_file(path, kMaxModelJsonBytes);
  if (!text) return text.error();
  return parse_model_json(*text, path);
}

}  // namespace powertrain::workload
