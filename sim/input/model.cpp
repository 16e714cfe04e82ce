#include "sim/input/model.h"

#include <algorithm>
#include <cstdio>

#include "sim/parse/reader.h"

namespace arlsim::input {

bool ModelSpec::is_moe_layer(int64_t layer) const {
  if (!has_moe || layer < moe.first_dense_layers) return false;
  if (std::find(moe.dense_layers.begin(), moe.dense_layers.end(), layer) != moe.dense_layers.end()) return false;
  return (layer + 1) % moe.layer_frequency == 0;
}

int64_t ModelSpec::num_moe_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

bool looks_like_hf_config(const Value& v) {
  return v.is_object() && (v.find("model_type") != nullptr || v.find("architectures") != nullptr);
}

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;      // 16M: no real hidden size or vocabulary is larger
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 26;  // 64M tokens

const EnumName<MlpKind> kMlpNames[] = {{"gated", MlpKind::gated}, {"plain", MlpKind::plain}};
const EnumName<NormKind> kNormNames[] = {{"rmsnorm", NormKind::rmsnorm}, {"layernorm", NormKind::layernorm}};
const EnumName<PositionEmbedding> kPositionNames[] = {{"rotary", PositionEmbedding::rotary},
                                                      {"learned", PositionEmbedding::learned}};
const EnumName<AttentionKind> kAttentionNames[] = {{"gqa", AttentionKind::gqa}, {"mla", AttentionKind::mla}};

void read_dense_layers(ObjectReader& r, std::string_view key, std::vector<int64_t>& out) {
  const Value* v = r.field(key);
  if (!v) return;
  if (!v->is_array()) {
    r.error(key, "expected an array of layer indices, got " + v->describe());
    return;
  }
  for (size_t i = 0; i < v->items().size(); ++i) {
    int64_t layer = 0;
    if (read_int_value(v->items()[i], pointer_append(r.pointer_of(key), i), r.diag(), layer, 0, kMaxLayers - 1))
      out.push_back(layer);
  }
}

void parse_own_mla(ObjectReader& parent, ModelSpec& m) {
  const Value* v = parent.field("mla", m.attention == AttentionKind::mla ? Presence::required : Presence::optional);
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("mla"), parent.diag());
  r.read("q_lora_rank", m.mla.q_lora_rank, Presence::optional, 0, kMaxDim);
  r.read("kv_lora_rank", m.mla.kv_lora_rank, Presence::required, 1, kMaxDim);
  r.read("qk_nope_head_dim", m.mla.qk_nope_head_dim, Presence::required, 1, kMaxDim);
  r.read("qk_rope_head_dim", m.mla.qk_rope_head_dim, Presence::required, 1, kMaxDim);
  r.read("v_head_dim", m.mla.v_head_dim, Presence::required, 1, kMaxDim);
  r.finish();
}

void parse_own_moe(ObjectReader& parent, ModelSpec& m) {
  const Value* v = parent.field("moe");
  if (!v || v->is_null()) return;
  m.has_moe = true;
  ObjectReader r(*v, parent.pointer_of("moe"), parent.diag());
  r.read("num_experts", m.moe.num_experts, Presence::required, 1, 1 << 20);
  r.read("experts_per_token", m.moe.experts_per_token, Presence::required, 1, 1 << 20);
  r.read("expert_ffn_hidden_size", m.moe.expert_ffn_hidden_size, Presence::required, 1, kMaxDim);
  r.read("shared_experts", m.moe.shared_experts, Presence::optional, 0, 1 << 20);
  r.read("shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size, Presence::optional, 0, kMaxDim);
  r.read("first_dense_layers", m.moe.first_dense_layers, Presence::optional, 0, kMaxLayers);
  r.read("layer_frequency", m.moe.layer_frequency, Presence::optional, 1, kMaxLayers);
  read_dense_layers(r, "dense_layers", m.moe.dense_layers);
  r.read("router_bias", m.moe.router_bias, Presence::optional);
  r.finish();
}

void parse_own(ObjectReader& r, ModelSpec& m) {
  m.source = "arlsim";
  r.accept({"format"});
  if (r.read("name", m.name, Presence::optional) && m.name.empty()) r.error("name", "must not be empty (outputs are titled by it)");
  r.read("description", m.description, Presence::optional);
  r.read("family", m.family, Presence::optional);
  r.read("hidden_size", m.hidden_size, Presence::required, 1, kMaxDim);
  r.read("num_layers", m.num_layers, Presence::required, 1, kMaxLayers);
  r.read("num_heads", m.num_heads, Presence::required, 1, kMaxDim);
  m.num_kv_heads = m.num_heads;
  r.read("num_kv_heads", m.num_kv_heads, Presence::optional, 1, kMaxDim);
  r.read("head_dim", m.head_dim, Presence::optional, 1, kMaxDim);
  r.read("ffn_hidden_size", m.ffn_hidden_size, Presence::required, 1, kMaxDim);
  r.read("vocab_size", m.vocab_size, Presence::required, 1, kMaxDim);
  m.max_context = 4096;
  r.read("max_context", m.max_context, Presence::optional, 1, kMaxContext);
  r.read_enum("mlp", m.mlp, Presence::optional, kMlpNames);
  r.read_enum("norm", m.norm, Presence::optional, kNormNames);
  r.read_enum("position_embedding", m.position_embedding, Presence::optional, kPositionNames);
  r.read_enum("attention", m.attention, Presence::optional, kAttentionNames);
  r.read("tie_embeddings", m.tie_embeddings, Presence::optional);
  r.read("qkv_bias", m.qkv_bias, Presence::optional);
  r.read("out_bias", m.out_bias, Presence::optional);
  r.read("mlp_bias", m.mlp_bias, Presence::optional);
  r.read("qk_norm", m.qk_norm, Presence::optional);
  r.read("hidden_dropout", m.hidden_dropout, Presence::optional, 0, 0.99);
  r.read("attention_dropout", m.attention_dropout, Presence::optional, 0, 0.99);
  r.read("mtp_layers", m.mtp_layers, Presence::optional, 0, 64);
  parse_own_mla(r, m);
  parse_own_moe(r, m);
  r.finish();
}

// --- Hugging Face config.json -------------------------------------------------------------

const std::vector<std::string> kHfModelTypes = {"llama",     "mistral",   "mixtral",     "qwen2",
                                                "qwen3",     "qwen2_moe", "qwen3_moe",   "deepseek_v2",
                                                "deepseek_v3", "gpt_neox"};

// Reads a key that HF allows to be null (meaning "unset"); returns false when null or absent.
bool read_nullable(ObjectReader& r, std::string_view key, int64_t& out, int64_t lo, int64_t hi) {
  const Value* v = r.field(key);
  if (!v || v->is_null()) return false;
  return r.read(key, out, Presence::optional, lo, hi);
}

bool read_nullable(ObjectReader& r, std::string_view key, double& out, double lo, double hi) {
  const Value* v = r.field(key);
  if (!v || v->is_null()) return false;
  return r.read(key, out, Presence::optional, lo, hi);
}

void parse_hf_moe(ObjectReader& r, const std::string& type, ModelSpec& m) {
  MoeSpec& e = m.moe;
  if (type == "mixtral") {
    r.read("num_local_experts", e.num_experts, Presence::required, 1, 1 << 20);
    r.read("num_experts_per_tok", e.experts_per_token, Presence::required, 1, 1 << 20);
    e.expert_ffn_hidden_size = m.ffn_hidden_size;
    m.has_moe = true;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    r.read("num_experts", e.num_experts, Presence::required, 1, 1 << 20);
    r.read("num_experts_per_tok", e.experts_per_token, Presence::required, 1, 1 << 20);
    r.read("moe_intermediate_size", e.expert_ffn_hidden_size, Presence::required, 1, kMaxDim);
    r.read("decoder_sparse_step", e.layer_frequency, Presence::optional, 1, kMaxLayers);
    read_dense_layers(r, "mlp_only_layers", e.dense_layers);
    if (type == "qwen2_moe")
      r.read("shared_expert_intermediate_size", e.shared_expert_ffn_hidden_size, Presence::optional, 0, kMaxDim);
    m.has_moe = true;
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    int64_t routed = 0;
    if (!read_nullable(r, "n_routed_experts", routed, 1, 1 << 20)) return;
    e.num_experts = routed;
    r.read("num_experts_per_tok", e.experts_per_token, Presence::required, 1, 1 << 20);
    r.read("moe_intermediate_size", e.expert_ffn_hidden_size, Presence::required, 1, kMaxDim);
    read_nullable(r, "n_shared_experts", e.shared_experts, 0, 1 << 20);
    r.read("first_k_dense_replace", e.first_dense_layers, Presence::optional, 0, kMaxLayers);
    int64_t freq = 1;
    r.read("moe_layer_freq", freq, Presence::optional, 1, kMaxLayers);
    // DeepSeek's rule is "layer % freq == 0"; arlsim's grid is "(layer + 1) % freq == 0", so
    // spell DeepSeek's out as explicit dense layers.
    if (freq > 1)
      for (int64_t l = 0; l < m.num_layers; ++l)
        if (l % freq != 0) e.dense_layers.push_back(l);
    std::string topk;
    r.read("topk_method", topk, Presence::optional);
    e.router_bias = topk == "noaux_tc";
    m.has_moe = true;
  }
}

void parse_hf_mla(ObjectReader& r, ModelSpec& m) {
  m.attention = AttentionKind::mla;
  read_nullable(r, "q_lora_rank", m.mla.q_lora_rank, 1, kMaxDim);
  r.read("kv_lora_rank", m.mla.kv_lora_rank, Presence::required, 1, kMaxDim);
  r.read("qk_nope_head_dim", m.mla.qk_nope_head_dim, Presence::required, 1, kMaxDim);
  r.read("qk_rope_head_dim", m.mla.qk_rope_head_dim, Presence::required, 1, kMaxDim);
  r.read("v_head_dim", m.mla.v_head_dim, Presence::required, 1, kMaxDim);
  r.read("num_nextn_predict_layers", m.mtp_layers, Presence::optional, 0, 64);
}

void parse_hf(ObjectReader& r, ModelSpec& m) {
  m.source = "huggingface";
  r.allow_unknown_keys();
  std::string type;
  if (!r.read("model_type", type, Presence::required)) {
    r.finish_ignoring_unknown();
    return;
  }
  if (std::find(kHfModelTypes.begin(), kHfModelTypes.end(), type) == kHfModelTypes.end()) {
    const std::string guess = closest_match(type, kHfModelTypes);
    r.error("model_type", "unsupported Hugging Face model_type " + quote(type) + "; supported: " + join_quoted(kHfModelTypes, ", "),
            guess.empty() ? std::string() : "did you mean " + quote(guess) + "?");
    r.finish_ignoring_unknown();
    return;
  }
  m.family = type;
  if (const Value* arch = r.field("architectures"); arch && arch->is_array() && !arch->items().empty() &&
                                                    arch->items()[0].is_string())
    m.description = arch->items()[0].as_string();

  r.read("hidden_size", m.hidden_size, Presence::required, 1, kMaxDim);
  r.read("num_hidden_layers", m.num_layers, Presence::required, 1, kMaxLayers);
  r.read("num_attention_heads", m.num_heads, Presence::required, 1, kMaxDim);
  m.num_kv_heads = m.num_heads;
  read_nullable(r, "num_key_value_heads", m.num_kv_heads, 1, kMaxDim);
  read_nullable(r, "head_dim", m.head_dim, 1, kMaxDim);
  r.read("vocab_size", m.vocab_size, Presence::required, 1, kMaxDim);
  m.max_context = 4096;
  r.read("max_position_embeddings", m.max_context, Presence::optional, 1, kMaxContext);
  r.read("tie_word_embeddings", m.tie_embeddings, Presence::optional);

  if (type == "gpt_neox") {
    m.mlp = MlpKind::plain;
    m.norm = NormKind::layernorm;
    m.qkv_bias = m.out_bias = m.mlp_bias = true;
    r.read("attention_bias", m.qkv_bias, Presence::optional);
    m.out_bias = m.qkv_bias;
    m.ffn_hidden_size = 4 * m.hidden_size;
    r.read("intermediate_size", m.ffn_hidden_size, Presence::optional, 1, kMaxDim);
  } else {
    r.read("intermediate_size", m.ffn_hidden_size, type == "qwen3_moe" || type == "qwen2_moe" ? Presence::optional
                                                                                             : Presence::required,
           1, kMaxDim);
    bool attention_bias = type == "qwen2" || type == "qwen2_moe";
    r.read("attention_bias", attention_bias, Presence::optional);
    m.qkv_bias = attention_bias;
    // Qwen2's projections have q/k/v biases but none on the output; Llama's flag covers all four.
    m.out_bias = attention_bias && (type == "llama" || type == "mistral" || type == "qwen3" || type == "qwen3_moe");
    r.read("mlp_bias", m.mlp_bias, Presence::optional);
    m.qk_norm = type == "qwen3" || type == "qwen3_moe";
  }
  read_nullable(r, "attention_dropout", m.attention_dropout, 0.0, 0.99);
  read_nullable(r, "hidden_dropout", m.hidden_dropout, 0.0, 0.99);
  if (type == "deepseek_v2" || type == "deepseek_v3") parse_hf_mla(r, m);
  parse_hf_moe(r, type, m);
  // The published config keeps keys arlsim does not read; keys added over it (a document that
  // extends it, --set) must be ones arlsim reads.
  const Value* base = r.field("model_type");
  r.finish_allowing_unknown_from(base && base->file() ? base->file().get() : nullptr);
}

void check_model(const Value& v, const std::string& pointer, Diagnostics& diag, ModelSpec& m) {
  auto at = [&](std::string_view hf_key, std::string_view own_key) {
    const std::string_view key = m.source == "huggingface" ? hf_key : own_key;
    const Value* f = v.is_object() ? v.find(key) : nullptr;
    return std::pair<const Value&, std::string>(f ? *f : v, f ? pointer_append(pointer, key) : pointer);
  };
  if (m.num_heads > 0 && m.num_kv_heads > 0 && m.num_heads % m.num_kv_heads != 0) {
    auto [where, ptr] = at("num_key_value_heads", "num_kv_heads");
    diag.error(where, ptr,
               "the number of key-value heads (" + std::to_string(m.num_kv_heads) +
                   ") must divide the number of attention heads (" + std::to_string(m.num_heads) + ")");
  }
  if (m.head_dim == 0 && m.attention == AttentionKind::gqa && m.num_heads > 0) {
    if (m.hidden_size % m.num_heads != 0) {
      auto [where, ptr] = at("num_attention_heads", "num_heads");
      diag.error(where, ptr,
                 "hidden size " + std::to_string(m.hidden_size) + " is not divisible by " +
                     std::to_string(m.num_heads) + " heads",
                 "set head_dim explicitly");
    } else {
      m.head_dim = m.hidden_size / m.num_heads;
    }
  }
  if (m.attention == AttentionKind::mla && m.head_dim == 0) m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  if (m.has_moe) {
    if (m.moe.experts_per_token > m.moe.num_experts) {
      auto [where, ptr] = at("num_experts_per_tok", "moe");
      diag.error(where, ptr,
                 "experts per token (" + std::to_string(m.moe.experts_per_token) + ") exceeds the number of experts (" +
                     std::to_string(m.moe.num_experts) + ")");
    }
    for (int64_t layer : m.moe.dense_layers) {
      if (layer >= m.num_layers) {
        auto [where, ptr] = at("mlp_only_layers", "moe");
        diag.error(where, ptr,
                   "dense layer " + std::to_string(layer) + " does not exist; the model has " +
                       std::to_string(m.num_layers) + " layers");
        break;
      }
    }
    if (m.num_moe_layers() == 0 && m.num_layers > 0) {
      auto [where, ptr] = at("first_k_dense_replace", "moe");
      diag.error(where, ptr, "mixture-of-experts settings leave no layer with experts");
    }
    if (m.ffn_hidden_size == 0) m.ffn_hidden_size = m.moe.expert_ffn_hidden_size;
  }
  // Each size is within its range, but their product can still pass what a count of parameters
  // (or of bytes) holds: the weights of every layer's projections and experts, roughly. The largest
  // published models have a few trillion; 10^15 leaves room and stays far from int64's range.
  const double h = static_cast<double>(m.hidden_size), layers = static_cast<double>(m.num_layers);
  double params = layers * (4.0 * h * h + 3.0 * h * static_cast<double>(m.ffn_hidden_size)) +
                  2.0 * h * static_cast<double>(m.vocab_size);
  if (m.has_moe)
    params += layers * static_cast<double>(m.moe.num_experts) * 3.0 * h * static_cast<double>(m.moe.expert_ffn_hidden_size);
  if (params > 1e15) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", params);
    diag.error(v, pointer,
               std::string("these sizes make about ") + count + " parameters, more than the 10^15 arlsim can count",
               "check hidden_size, the layers, the FFN and the experts' sizes");
  }
}

}  // namespace

bool parse_model(const Value& v, const std::string& pointer, Diagnostics& diag, ModelSpec& out) {
  const size_t errors_before = diag.error_count();
  ModelSpec m;
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  if (looks_like_hf_config(v)) parse_hf(r, m);
  else parse_own(r, m);
  if (diag.error_count() == errors_before) check_model(v, pointer, diag, m);
  if (m.name.empty() && v.file()) {
    // Hugging Face configs carry no name: use the file's (or preset's) name.
    std::string n = v.file()->display_name;
    n = n.substr(n.find_last_of("/:") == std::string::npos ? 0 : n.find_last_of("/:") + 1);
    if (n.size() > 5 && n.ends_with(".json")) n.resize(n.size() - 5);
    m.name = n;
  }
  out = std::move(m);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
