#include "sim/input/loader.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "sim/input/model.h"
#include "sim/input/presets.h"

namespace arlsim::input {
namespace fs = std::filesystem;

namespace {

struct RefField {
  SpecKind owner;
  std::string_view path;  // "gpu" or "reward/model"
  SpecKind target;
};

// Which fields of which kinds hold references, and to what.
constexpr std::array<RefField, 10> kRefFields{{
    {SpecKind::scenario, "cluster", SpecKind::cluster},
    {SpecKind::scenario, "model", SpecKind::model},
    {SpecKind::scenario, "workload", SpecKind::workload},
    {SpecKind::scenario, "policy", SpecKind::policy},
    {SpecKind::cluster, "gpu", SpecKind::gpu},
    {SpecKind::workload, "critic", SpecKind::model},
    {SpecKind::workload, "reward/model", SpecKind::model},
    {SpecKind::stage, "model", SpecKind::model},
    {SpecKind::stage, "gpu", SpecKind::gpu},
    {SpecKind::stage, "cluster", SpecKind::cluster},
}};

constexpr std::array<std::string_view, 7> kKindNames{"model", "gpu", "cluster", "workload", "policy", "scenario", "stage"};

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.find('\\') != std::string_view::npos ||
         (s.size() > 5 && s.substr(s.size() - 5) == ".json");
}

std::string join_names(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}

}  // namespace

const char* kind_name(SpecKind k) { return kKindNames[static_cast<size_t>(k)].data(); }

std::optional<SpecKind> kind_from_name(std::string_view name) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == name) return static_cast<SpecKind>(i);
  return std::nullopt;
}

std::vector<std::string> kind_names() { return {kKindNames.begin(), kKindNames.end()}; }

std::optional<SpecKind> detect_kind(const Value& doc, Diagnostics& diag) {
  if (!doc.is_object()) {
    diag.error(doc, "", "expected a JSON object, got " + doc.describe());
    return std::nullopt;
  }
  if (const Value* f = doc.find("format")) {
    const std::string prefix = "arlsim-";
    if (f->is_string() && f->as_string().starts_with(prefix)) {
      std::string rest = f->as_string().substr(prefix.size());
      const size_t slash = rest.find('/');
      const std::string name = rest.substr(0, slash);
      const std::string version = slash == std::string::npos ? "" : rest.substr(slash + 1);
      if (auto k = kind_from_name(name)) {
        if (version != "1") {
          diag.error(*f, "/format", "unsupported format version " + quote(f->as_string()),
                     "this arlsim reads \"arlsim-" + name + "/1\"");
          return std::nullopt;
        }
        return k;
      }
      std::vector<std::string> formats;
      for (auto n : kKindNames) formats.push_back("arlsim-" + std::string(n) + "/1");
      const std::string guess = closest_match(f->as_string(), formats);
      diag.error(*f, "/format", "unknown format " + quote(f->as_string()),
                 guess.empty() ? "expected one of " + join_quoted(formats) : "did you mean " + quote(guess) + "?");
      return std::nullopt;
    }
    if (!(f->is_string() && f->as_string().starts_with("arlsim-plan"))) {
      diag.error(*f, "/format", "expected \"arlsim-<kind>/1\", got " + f->describe());
      return std::nullopt;
    }
  }
  if (looks_like_hf_config(doc)) return SpecKind::model;
  if (const Value* k = doc.find("kind"); k && k->is_string()) return SpecKind::stage;
  auto has = [&](std::string_view k) { return doc.find(k) != nullptr; };
  if (has("hidden_size") || has("num_layers")) return SpecKind::model;
  if (has("peak") || has("provenance")) return SpecKind::gpu;
  if (has("gpus_per_node") || (has("gpu") && has("nodes"))) return SpecKind::cluster;
  if (has("workload") || (has("cluster") && has("model"))) return SpecKind::scenario;
  if (has("prompts_per_step") || has("algorithm")) return SpecKind::workload;
  if (has("placement") || has("train") || has("rollout")) return SpecKind::policy;
  diag.error(doc, "", "cannot tell what kind of input this is",
             "add \"format\": \"arlsim-<kind>/1\" (kinds: " + join_quoted(kind_names(), ", ") +
                 ") or pass --kind");
  return std::nullopt;
}

std::optional<Value> Loader::read_file(const std::string& path, const std::string& display, Diagnostics& diag) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    diag.error_global(display + ": no such file");
    return std::nullopt;
  }
  if (fs::is_directory(status)) {
    diag.error_global(display + ": is a directory, not a JSON file");
    return std::nullopt;
  }
  auto file = std::make_shared<SourceFile>();
  file->display_name = display;
  file->directory = fs::path(path).parent_path().string();
  const ParseLimits limits;
  const auto size = fs::file_size(path, ec);
  if (!ec && size > limits.max_bytes) {
    diag.error_in_file(file, {},
                        "the file is " + std::to_string(size >> 20) + " MiB; input files of this kind are limited to " +
                            std::to_string(limits.max_bytes >> 20) + " MiB");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diag.error_global(display + ": cannot be read");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  const size_t errors_before = diag.error_count();
  Value v = parse_json(text.str(), file, diag, limits);
  if (diag.error_count() != errors_before && v.is_null()) return std::nullopt;
  return v;
}

// A plan written by `arlsim plan` carries the scenario it was made for, with the planned policy:
// loading it as a scenario takes that. Anything else is left as it is.
bool unwrap_plan(Value& doc, Diagnostics& diag) {
  const Value* f = doc.is_object() ? doc.find("format") : nullptr;
  if (!f || !f->is_string() || !f->as_string().starts_with("arlsim-plan")) return true;
  if (f->as_string() != "arlsim-plan/1") {
    diag.error(*f, "/format", "unsupported format version " + quote(f->as_string()), "this arlsim reads \"arlsim-plan/1\"");
    return false;
  }
  const Value* scenario = doc.find("scenario");
  if (!scenario || !scenario->is_object()) {
    diag.error(doc, "/scenario", "a plan must carry its scenario as an object", "write plans with `arlsim plan`");
    return false;
  }
  Value inner = *scenario;
  doc = std::move(inner);
  return true;
}

std::optional<Value> Loader::load(std::string_view path_or_name, std::optional<SpecKind> kind, SpecKind* detected) {
  const std::string arg(path_or_name);
  std::error_code ec;
  std::optional<Value> doc;
  std::string identity;
  if (fs::exists(arg, ec) || looks_like_path(arg)) {
    identity = fs::weakly_canonical(arg, ec).string();
    doc = read_file(arg, arg, diag_);
  } else {
    const Preset* found = nullptr;
    for (const auto& p : presets()) {
      if (p.kind == kNotASpec) continue;
      if (p.name == arg && (!kind || p.kind == kind_name(*kind))) {
        found = &p;
        break;
      }
    }
    if (!found) {
      std::vector<std::string> names;
      for (const auto& p : presets())
        if (p.kind != kNotASpec && (!kind || p.kind == kind_name(*kind))) names.emplace_back(p.name);
      const std::string guess = closest_match(arg, names);
      diag_.error_global(quote(arg) + " is neither a file nor a " + (kind ? std::string(kind_name(*kind)) + " " : "") + "preset",
                         guess.empty() ? "see `arlsim list`" : "did you mean " + quote(guess) + "?");
      return std::nullopt;
    }
    auto file = std::make_shared<SourceFile>();
    file->display_name = "preset:" + std::string(found->kind) + "/" + std::string(found->name);
    file->is_preset = true;
    identity = file->display_name;
    doc = parse_json(found->text, file, diag_);
  }
  if (!doc) return std::nullopt;
  if (!kind || *kind == SpecKind::scenario)
    if (!unwrap_plan(*doc, diag_)) return std::nullopt;
  const std::optional<SpecKind> k = kind ? kind : detect_following_extends(*doc);
  if (!k) return std::nullopt;
  if (detected) *detected = *k;
  stack_.push_back(identity);
  chain_.push_back(doc->file() ? doc->file()->display_name : arg);
  resolve(*doc, *k, "");
  stack_.pop_back();
  chain_.pop_back();
  return doc;
}

std::optional<SpecKind> Loader::detect_following_extends(const Value& doc) {
  const Value* current = &doc;
  std::optional<Value> base;
  for (int depth = 0; depth < 16; ++depth) {
    Diagnostics scratch;
    if (auto k = detect_kind(*current, scratch)) return k;
    const Value* ext = current->is_object() ? current->find("extends") : nullptr;
    if (!ext || !ext->is_string() || !ext->file()) break;
    // Read what it extends without resolving it: a file next to it, or a preset of any kind.
    const std::string& name = ext->as_string();
    const fs::path candidate = (fs::path(ext->file()->directory) / name).lexically_normal();
    std::error_code ec;
    Diagnostics ignored;
    if (!ext->file()->is_preset && fs::is_regular_file(candidate, ec)) {
      base = read_file(candidate.string(), candidate.string(), ignored);
    } else {
      base.reset();
      for (const auto& p : presets()) {
        if (p.name != name || p.kind == kNotASpec) continue;
        auto file = std::make_shared<SourceFile>();
        file->display_name = name;
        file->is_preset = true;
        base = parse_json(p.text, file, ignored);
        break;
      }
    }
    if (!base) break;
    current = &*base;
  }
  return detect_kind(doc, diag_);
}

std::optional<Value> Loader::load_reference(const Value& ref, SpecKind kind, const std::string& pointer) {
  const std::string& name = ref.as_string();
  const auto& from = ref.file();
  std::optional<Value> doc;
  std::string identity, display;
  std::error_code ec;
  fs::path candidate;
  if (from && !from->is_preset) candidate = (fs::path(from->directory) / name).lexically_normal();
  const bool file_exists = !candidate.empty() && fs::is_regular_file(candidate, ec);
  const Preset* preset = file_exists ? nullptr : find_preset(kind_name(kind), name);
  if (file_exists || (looks_like_path(name) && !preset)) {
    if (!from || from->is_preset) {
      diag_.error(ref, pointer, "a preset cannot refer to the file " + quote(name));
      return std::nullopt;
    }
    identity = fs::weakly_canonical(candidate, ec).string();
    display = fs::path(candidate).string();
    if (!file_exists) {
      diag_.error(ref, pointer, "no such file " + quote(display));
      return std::nullopt;
    }
  } else if (preset) {
    identity = "preset:" + std::string(preset->kind) + "/" + std::string(preset->name);
    display = identity;
  } else {
    std::vector<std::string> names;
    for (auto n : preset_names(kind_name(kind))) names.emplace_back(n);
    const std::string guess = closest_match(name, names);
    diag_.error(ref, pointer,
                "unknown " + std::string(kind_name(kind)) + " preset " + quote(name) + " (and no such file)",
                !guess.empty() ? "did you mean " + quote(guess) + "?"
                : names.empty() ? "there are no " + std::string(kind_name(kind)) + " presets: name a file"
                                : "valid presets: " + join_names(preset_names(kind_name(kind))));
    return std::nullopt;
  }
  if (std::find(stack_.begin(), stack_.end(), identity) != stack_.end()) {
    std::string cycle;
    const auto first = std::find(stack_.begin(), stack_.end(), identity) - stack_.begin();
    for (size_t i = static_cast<size_t>(first); i < chain_.size(); ++i) cycle += chain_[i] + " -> ";
    diag_.error(ref, pointer, "reference cycle: " + cycle + display);
    return std::nullopt;
  }
  if (preset) {
    auto file = std::make_shared<SourceFile>();
    file->display_name = display;
    file->is_preset = true;
    doc = parse_json(preset->text, file, diag_);
  } else {
    doc = read_file(candidate.string(), display, diag_);
  }
  if (!doc || (doc->is_null() && diag_.has_errors())) return std::nullopt;
  if (const Value* f = doc->find("format"); f && f->is_string()) {
    const std::string expected = "arlsim-" + std::string(kind_name(kind)) + "/1";
    if (f->as_string() != expected && f->as_string().starts_with("arlsim-")) {
      diag_.error(ref, pointer,
                  quote(name) + " is " + quote(f->as_string()) + ", not a " + kind_name(kind) + " (" + expected + ")");
      return std::nullopt;
    }
  }
  stack_.push_back(identity);
  chain_.push_back(display);
  resolve(*doc, kind, "");
  stack_.pop_back();
  chain_.pop_back();
  return doc;
}

namespace {

// A part of `mine` (a document extending `theirs`) that extends a preset or file of its own (a
// cluster naming another GPU's cluster, a GPU naming another profile) starts from what it names,
// not from the base's part merged with it: the base's part is dropped from `theirs`, at any depth
// of parts (the scenario's cluster, the cluster's GPU).
void drop_replaced_parts(const Value& mine, Value& theirs, SpecKind kind) {
  for (const auto& ref : kRefFields) {
    if (ref.owner != kind) continue;
    const Value* m = &mine;
    Value* parent = &theirs;
    std::string_view path = ref.path, key;
    for (;;) {
      const size_t slash = path.find('/');
      key = path.substr(0, slash);
      if (slash == std::string_view::npos) break;
      path = path.substr(slash + 1);
      m = m && m->is_object() ? m->find(key) : nullptr;
      parent = parent && parent->is_object() ? parent->find(key) : nullptr;
    }
    m = m && m->is_object() ? m->find(key) : nullptr;
    Value* t = parent && parent->is_object() ? parent->find(key) : nullptr;
    if (!m || !m->is_object() || !t || !t->is_object()) continue;
    if (m->find("extends")) parent->erase(key);
    else drop_replaced_parts(*m, *t, ref.target);
  }
}

bool from_preset(const std::shared_ptr<const SourceFile>& f) { return f && f->is_preset; }

// Whether anything inside `v` was written by a user's file or an override.
bool has_user_content(const Value& v) {
  if (!v.is_object() && !v.is_array()) return !from_preset(v.file());
  for (const auto& m : v.members())
    if (!from_preset(m.key_file) || has_user_content(*m.value)) return true;
  for (const auto& item : v.items())
    if (has_user_content(item)) return true;
  return false;
}

// What presets gave `v` (its fields from a preset, at any depth), removed: a part given another
// `extends` by an override keeps the fields of the user's files and overrides only, a reference
// they name (a cluster's "gpu": "h200-sxm") whole.
void drop_preset_fields(Value& v) {
  std::vector<std::string> gone;
  for (auto& m : v.members()) {
    Value& x = *m.value;
    const bool users_key = !from_preset(m.key_file);
    if (x.is_object()) {
      if (users_key && !has_user_content(x)) continue;  // a reference the user named, loaded
      drop_preset_fields(x);
      if (x.members().empty() && !users_key) gone.push_back(m.key);
    } else if (!users_key && from_preset(x.file())) {
      gone.push_back(m.key);
    }
  }
  for (const auto& k : gone) v.erase(k);
}

}  // namespace

void Loader::resolve_extends(Value& doc, SpecKind kind, const std::string& pointer) {
  const Value* ext = doc.find("extends");
  if (!ext) return;
  if (!ext->is_string()) {
    diag_.error(*ext, pointer_append(pointer, "extends"),
                "expected the name or path of a " + std::string(kind_name(kind)) + " to extend, got " + ext->describe());
    doc.erase("extends");
    return;
  }
  std::optional<Value> base = load_reference(*ext, kind, pointer_append(pointer, "extends"));
  doc.erase("extends");
  if (!base) return;
  Value merged = std::move(*base);
  drop_replaced_parts(doc, merged, kind);
  merge_patch(merged, doc);
  doc = std::move(merged);
}

void Loader::resolve(Value& doc, SpecKind kind, const std::string& pointer) {
  if (doc.unresolved()) return;  // already reported
  if (doc.is_string()) {
    if (auto loaded = load_reference(doc, kind, pointer)) doc = std::move(*loaded);
    else doc.mark_unresolved();
    return;
  }
  if (!doc.is_object()) return;
  resolve_extends(doc, kind, pointer);
  for (const auto& ref : kRefFields) {
    if (ref.owner != kind) continue;
    Value* field = &doc;
    std::string ptr = pointer;
    std::string_view path = ref.path;
    while (field && field->is_object() && !path.empty()) {
      const size_t slash = path.find('/');
      const std::string_view key = path.substr(0, slash);
      field = field->find(key);
      ptr = pointer_append(ptr, key);
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    }
    if (field && path.empty() && (field->is_string() || field->is_object())) resolve(*field, ref.target, ptr);
  }
}

void merge_patch(Value& target, const Value& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) {
    target = Value::make_object();
    target.set_origin(patch.file(), patch.pos());
  }
  for (const auto& m : patch.members()) {
    if (m.value->is_null()) {
      target.erase(m.key);
      continue;
    }
    if (m.value->is_object()) {
      // RFC 7386: an object patch merges into the target's value, or into an empty object.
      Value* existing = target.find(m.key);
      if (!existing || !existing->is_object()) {
        Value fresh = Value::make_object();
        fresh.set_origin(m.value->file(), m.value->pos());
        target.set(m.key, std::move(fresh));
        existing = target.find(m.key);
      }
      merge_patch(*existing, *m.value);
    } else {
      target.set(m.key, *m.value);
    }
  }
  // Keys from the patch report their own position.
  for (auto& tm : target.members())
    if (const Member* pm = patch.find_member(tm.key)) {
      tm.key_pos = pm->key_pos;
      tm.key_file = pm->key_file;
    }
}

bool apply_override(Value& root, std::string_view assignment, Diagnostics& diag) {
  auto file = std::make_shared<SourceFile>();
  file->display_name = "--set " + std::string(assignment);
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    diag.error_in_file(file, {}, "expected /json/pointer=value");
    return false;
  }
  std::string pointer(assignment.substr(0, eq));
  if (!pointer.empty() && pointer[0] != '/') pointer = "/" + pointer;  // "cluster/nodes" is a convenience
  std::vector<std::string> tokens;
  if (!pointer_split(pointer, tokens) || tokens.empty()) {
    diag.error_in_file(file, {}, "invalid JSON pointer " + quote(pointer), "write e.g. /cluster/nodes=4");
    return false;
  }
  Value* node = &root;
  std::string walked;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    walked = pointer_append(walked, tokens[i]);
    Value* next = nullptr;
    if (node->is_object()) {
      next = node->find(tokens[i]);
    } else if (node->is_array()) {
      const std::string& t = tokens[i];
      if (!t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos &&
          std::stoul(t) < node->items().size())
        next = &node->items()[std::stoul(t)];
    }
    if (!next) {
      diag.error_in_file(file, {}, walked + " does not exist in the document");
      return false;
    }
    node = next;
  }
  const std::string& last = tokens.back();
  Value value = parse_json_or_string(assignment.substr(eq + 1), file);
  value.set_origin_recursive(file, {});
  if (node->is_object()) {
    // null deletes the key, as an RFC 7386 merge patch does (`--set /policy/rollout_gpus=null`
    // takes a field back to its default, so that colocated vs disaggregated is one --vary).
    if (value.is_null()) {
      // Deleting a key that is not there changes nothing; when a key beside it is spelt alike,
      // the one meant was most likely that.
      if (!node->find(last)) {
        std::string near;  // a typo's distance: one or two letters, in a word over three times as long
        for (const auto& m : node->members())
          if (const size_t d = edit_distance(last, m.key); d <= 2 && 3 * d < last.size() && near.empty()) near = m.key;
        if (!near.empty()) {
          diag.error_in_file(file, {}, pointer_append(walked, last) + ": nothing to delete (no such key)",
                             "did you mean " + quote(pointer_append(walked, near)) + "?");
          return false;
        }
      }
      node->erase(last);
    }
    else {
      // A part given another base starts from it: what the old base's presets gave goes.
      if (last == "extends") drop_preset_fields(*node);
      node->set(last, std::move(value));
    }
    return true;
  }
  if (node->is_array() && !last.empty() && last.size() < 10 && last.find_first_not_of("0123456789") == std::string::npos &&
      std::stoul(last) < node->items().size()) {
    node->items()[std::stoul(last)] = std::move(value);
    return true;
  }
  diag.error_in_file(file, {}, (walked.empty() ? std::string("the document") : walked) + " is not an object or has no element " + quote(last));
  return false;
}

}  // namespace arlsim::input
