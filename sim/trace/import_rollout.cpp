#include "sim/trace/import_rollout.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "sim/parse/json.h"
#include "sim/trace/json_text.h"
#include "sim/trace/random.h"

namespace arlsim::trace {
namespace {

enum Role { kStep, kPromptId, kSample, kPromptTokens, kResponseTokens, kTotalTokens, kTurns, kTruncated, kRoleCount };

struct Sample {
  int32_t step = 0;
  int64_t prompt_id = 0;  // order of first appearance of the prompt over all files
  std::optional<int32_t> sample;
  int64_t prompt_tokens = 0;
  int64_t response_tokens = 0;
  int turns = 1;
  bool truncated = false;
  std::string where;  // "FILE:LINE" for messages about several samples
};

// The step a file name carries (verl writes STEP.jsonl): its last run of digits.
std::optional<int32_t> step_from_name(const std::string& name) {
  std::string base = name.substr(name.find_last_of("/\\") + 1);
  base = base.substr(0, base.find('.'));
  const size_t end = base.find_last_of("0123456789");
  if (end == std::string::npos) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(base[begin - 1]))) --begin;
  const std::string digits = base.substr(begin, end - begin + 1);
  if (digits.size() > 9) return std::nullopt;
  return static_cast<int32_t>(std::stol(digits));
}

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

class DumpReader {
 public:
  DumpReader(const RolloutImportOptions& o, parse::Diagnostics& diag) : o_(o), diag_(diag) {}

  void read(const NamedText& file);
  std::vector<Sample>& samples() { return samples_; }
  parse::Value fields_used() const;

 private:
  void line(const NamedText& file, std::string_view text, uint32_t line_no);
  const parse::Value* find(const parse::Value& obj, Role role);
  const parse::Value* find_text(const parse::Value& obj, Role role);
  void error(const parse::Value* at, Role role, std::string message, std::string hint = {});
  bool count_of(const parse::Value& v, Role role, int64_t& out);
  // A token count; for the prompt, `response` >= 0 allows "all tokens minus the response".
  bool token_count(const parse::Value& obj, Role role, bool required, int64_t& out, int64_t response = -1);
  bool prompt_key(const parse::Value& obj, int32_t step, int64_t& out);
  bool index_field(const parse::Value& obj, Role role, std::optional<int32_t>& out);
  bool truncated_field(const parse::Value& obj, bool& out);

  const RolloutImportOptions& o_;
  parse::Diagnostics& diag_;
  std::vector<Sample> samples_;
  std::unordered_map<std::string, int64_t> prompt_ids_;
  std::map<int32_t, int64_t> per_step_count_;  // for groups of consecutive samples
  std::array<std::set<std::string>, kRoleCount> used_;
  std::array<std::string, kRoleCount> last_field_;
  std::string file_;
  uint32_t line_no_ = 0;
};

const parse::Value* DumpReader::find(const parse::Value& obj, Role role) {
  const auto& r = rollout_roles()[role];
  for (const auto& [name, field] : o_.fields) {
    if (name != r.name) continue;
    last_field_[role] = field;
    if (field.empty() || field[0] != '/') return obj.find(field);
    std::vector<std::string> tokens;
    const parse::Value* v = &obj;
    if (!parse::pointer_split(field, tokens)) return nullptr;
    for (const auto& t : tokens) {
      v = v->is_object() ? v->find(t) : nullptr;
      if (!v) return nullptr;
    }
    return v;
  }
  for (auto alias : r.aliases) {
    if (const parse::Value* v = obj.find(alias)) {
      last_field_[role] = std::string(alias);
      return v;
    }
  }
  last_field_[role].clear();
  return nullptr;
}

const parse::Value* DumpReader::find_text(const parse::Value& obj, Role role) {
  for (const auto& [name, field] : o_.fields)
    if (name == rollout_roles()[role].name) return nullptr;  // an explicit choice has no fallback
  for (auto alias : rollout_roles()[role].text_aliases) {
    if (const parse::Value* v = obj.find(alias)) {
      last_field_[role] = std::string(alias);
      return v;
    }
  }
  return nullptr;
}

void DumpReader::error(const parse::Value* at, Role role, std::string message, std::string hint) {
  parse::Diagnostic d;
  d.file = file_;
  d.pos = {line_no_, 0};
  if (at && at->pos().line > 0) d.pos = {line_no_ + at->pos().line - 1, at->pos().column};
  const std::string& field = last_field_[role];
  if (at) d.pointer = !field.empty() && field[0] == '/' ? field : parse::pointer_append("", field);
  d.message = std::move(message);
  d.hint = std::move(hint);
  diag_.add(std::move(d));
}

bool DumpReader::count_of(const parse::Value& v, Role role, int64_t& out) {
  used_[role].insert(last_field_[role]);
  constexpr double kMaxTokens = std::numeric_limits<int32_t>::max();
  double count = -1;
  if (v.is_number() && v.as_double() >= 0 && v.as_double() == std::floor(v.as_double())) count = v.as_double();
  else if (v.is_array()) count = static_cast<double>(v.items().size());
  else if (v.is_string() && o_.chars_per_token > 0)
    count = std::ceil(static_cast<double>(utf8_chars(v.as_string())) / o_.chars_per_token);
  if (count > kMaxTokens) {
    error(&v, role, "more than " + std::to_string(static_cast<int64_t>(kMaxTokens)) + " tokens");
    return false;
  }
  if (count >= 0) {
    out = static_cast<int64_t>(count);
    return true;
  }
  error(&v, role, "expected a token count (a non-negative integer or an array of token ids), got " + v.describe(),
        v.is_string() ? "for text, give --chars-per-token to estimate its tokens" : "");
  return false;
}

bool DumpReader::token_count(const parse::Value& obj, Role role, bool required, int64_t& out, int64_t response) {
  if (const parse::Value* v = find(obj, role)) return count_of(*v, role, out);
  if (const parse::Value* total = response >= 0 ? find(obj, kTotalTokens) : nullptr) {
    int64_t all = 0;
    if (!count_of(*total, kTotalTokens, all)) return false;
    if (all < response) {
      error(total, kTotalTokens, "holds " + std::to_string(all) + " tokens, fewer than the response's " +
                                     std::to_string(response));
      return false;
    }
    out = all - response;
    return true;
  }
  if (const parse::Value* text = find_text(obj, role)) return count_of(*text, role, out);
  if (!required) return true;
  const auto& r = rollout_roles()[role];
  std::string aliases;
  for (auto a : r.aliases) aliases += (aliases.empty() ? "" : ", ") + std::string(a);
  for (auto a : r.text_aliases) aliases += ", " + std::string(a);
  error(nullptr, role, "no field for " + std::string(r.name) + " (looked for " + aliases + ")",
        "name it with --field " + std::string(r.name) + "=FIELD");
  return false;
}

bool DumpReader::prompt_key(const parse::Value& obj, int32_t step, int64_t& out) {
  const parse::Value* v = find(obj, kPromptId);
  std::string key;
  if (v && v->is_number() && v->is_int64()) {
    key = "n:" + v->literal();
  } else if (v && v->is_string()) {
    key = "s:" + v->as_string();
  } else if (v) {
    error(v, kPromptId, "expected a prompt id (an integer or a string), got " + v->describe());
    return false;
  } else if (o_.group_size > 0) {
    const int64_t index = per_step_count_[step]++;
    key = "g:" + std::to_string(step) + ":" + std::to_string(index / o_.group_size);
  } else {
    error(nullptr, kPromptId, "no prompt id (looked for prompt_id, uid, group_index, prompt_index, input, prompt)",
          "name it with --field prompt_id=FIELD, or give --group-size N if a prompt's samples are consecutive");
    return false;
  }
  if (v) used_[kPromptId].insert(last_field_[kPromptId]);
  const auto [it, added] = prompt_ids_.try_emplace(key, static_cast<int64_t>(prompt_ids_.size()));
  out = it->second;
  return true;
}

bool DumpReader::index_field(const parse::Value& obj, Role role, std::optional<int32_t>& out) {
  const parse::Value* v = find(obj, role);
  if (!v) return true;
  used_[role].insert(last_field_[role]);
  if (v->is_int64() && v->as_int64() >= 0 && v->as_int64() <= std::numeric_limits<int32_t>::max()) {
    out = static_cast<int32_t>(v->as_int64());
    return true;
  }
  error(v, role, "expected a non-negative integer, got " + v->describe());
  return false;
}

bool DumpReader::truncated_field(const parse::Value& obj, bool& out) {
  const parse::Value* v = find(obj, kTruncated);
  if (!v) return true;
  used_[kTruncated].insert(last_field_[kTruncated]);
  if (v->is_bool()) {
    out = v->as_bool();
    return true;
  }
  if (v->is_string()) {  // a status such as slime's "truncated" / "completed"
    std::string status = v->as_string();
    for (char& c : status) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out = status == "truncated";
    return true;
  }
  error(v, kTruncated, "expected true, false or a status string, got " + v->describe());
  return false;
}

void DumpReader::line(const NamedText& file, std::string_view text, uint32_t line_no) {
  line_no_ = line_no;
  parse::Diagnostics parse_diag;
  auto source = std::make_shared<parse::SourceFile>(parse::SourceFile{file.name, {}, false});
  const parse::Value obj = parse::parse_json(text, source, parse_diag);
  for (auto d : parse_diag.items()) {
    if (d.pos.line > 0) d.pos.line += line_no - 1;
    diag_.add(std::move(d));
  }
  if (parse_diag.has_errors()) return;
  if (!obj.is_object()) {
    error(nullptr, kStep, "expected a sample object, got " + obj.describe());
    return;
  }
  Sample s;
  s.where = file.name + ":" + std::to_string(line_no);
  std::optional<int32_t> step;
  bool ok = index_field(obj, kStep, step);
  if (!step && ok) step = step_from_name(file.name);
  if (!step && ok) {
    error(nullptr, kStep, "no step: no step field and no number in the file name",
          "name it with --field step=FIELD, or name the file after its step (12.jsonl)");
    ok = false;
  }
  s.step = step.value_or(0);
  const bool have_response = token_count(obj, kResponseTokens, true, s.response_tokens);
  ok &= have_response;
  ok &= token_count(obj, kPromptTokens, true, s.prompt_tokens, have_response ? s.response_tokens : -1);
  int64_t turns = 1;
  ok &= token_count(obj, kTurns, false, turns);
  s.turns = static_cast<int>(std::clamp<int64_t>(turns, 1, 100'000));
  ok &= index_field(obj, kSample, s.sample);
  ok &= truncated_field(obj, s.truncated);
  if (ok && prompt_key(obj, s.step, s.prompt_id)) samples_.push_back(std::move(s));
}

void DumpReader::read(const NamedText& file) {
  file_ = file.name;
  uint32_t line_no = 0;
  size_t pos = 0;
  const std::string_view text = file.text;
  while (pos < text.size()) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    const std::string_view l = text.substr(pos, nl - pos);
    ++line_no;
    pos = nl + 1;
    if (l.find_first_not_of(" \t\r") != std::string_view::npos) line(file, l, line_no);
  }
}

parse::Value DumpReader::fields_used() const {
  parse::Value fields = parse::Value::make_object();
  for (size_t r = 0; r < kRoleCount; ++r) {
    if (used_[r].empty()) continue;
    std::string names;
    for (const auto& n : used_[r]) names += (names.empty() ? "" : ", ") + n;
    fields.set(std::string(rollout_roles()[r].name), parse::Value::make_string(names));
  }
  return fields;
}

// Orders samples by step, prompt and sample, numbering samples within a group where the dump did
// not; reports a sample given twice.
bool order_samples(std::vector<Sample>& samples, parse::Diagnostics& diag) {
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return a.step != b.step ? a.step < b.step : a.prompt_id < b.prompt_id;
  });
  bool ok = true;
  for (size_t begin = 0; begin < samples.size();) {
    size_t end = begin;
    while (end < samples.size() && samples[end].step == samples[begin].step &&
           samples[end].prompt_id == samples[begin].prompt_id)
      ++end;
    int32_t next = 0;
    for (size_t i = begin; i < end; ++i) {
      if (!samples[i].sample) samples[i].sample = next;
      next = std::max(next, *samples[i].sample + 1);
    }
    std::stable_sort(samples.begin() + static_cast<long>(begin), samples.begin() + static_cast<long>(end),
                     [](const Sample& a, const Sample& b) { return *a.sample < *b.sample; });
    for (size_t i = begin + 1; i < end; ++i) {
      if (*samples[i].sample != *samples[i - 1].sample) continue;
      diag.error_global(samples[i].where + ": step " + std::to_string(samples[i].step) + " has sample " +
                        std::to_string(*samples[i].sample) + " of this prompt twice (also at " +
                        samples[i - 1].where + ")");
      ok = false;
    }
    begin = end;
  }
  return ok;
}

}  // namespace

const std::vector<RolloutRole>& rollout_roles() {
  static const std::vector<RolloutRole> roles{
      {"step", "training step (else the last number in the file name)", {"step", "global_step", "rollout_id"}, {}},
      {"prompt_id", "the prompt (a number or a string; the prompt text itself works)",
       {"prompt_id", "uid", "group_index", "prompt_index", "input", "prompt"},
       {}},
      {"sample", "index in the group (else the order of appearance)", {"sample", "sample_index"}, {}},
      {"prompt_tokens", "prompt tokens (a count, token ids, or text)",
       {"prompt_tokens", "prompt_length", "prompt_len", "num_prompt_tokens", "input_tokens", "prompt_token_ids"},
       {"input", "prompt"}},
      {"response_tokens", "response tokens (a count, token ids, or text)",
       {"response_tokens", "response_length", "response_len", "num_response_tokens", "output_tokens",
        "completion_tokens", "response_token_ids"},
       {"output", "response"}},
      {"total_tokens", "prompt and response tokens together: the prompt is this minus the response",
       {"total_tokens", "tokens", "sequence_length"},
       {}},
      {"turns", "turns in the trajectory", {"turns", "num_turns", "__num_turns__", "n_turns"}, {}},
      {"truncated", "cut at the limit (a boolean, or a status: \"truncated\" is true)",
       {"truncated", "is_truncated", "clipped", "status"},
       {}},
  };
  return roles;
}

std::optional<Trace> import_rollout_jsonl(const std::vector<NamedText>& files, const RolloutImportOptions& o,
                                          parse::Diagnostics& diag) {
  for (const auto& [role, field] : o.fields) {
    bool known = false;
    std::vector<std::string> names;
    for (const auto& r : rollout_roles()) {
      known |= r.name == role;
      names.emplace_back(r.name);
    }
    if (!known) {
      const std::string guess = parse::closest_match(role, names);
      diag.error_global("--field: unknown role " + parse::quote(role) + "; expected one of " +
                            parse::join_quoted(names, ", "),
                        guess.empty() ? "" : "did you mean " + parse::quote(guess) + "?");
    }
  }
  if (diag.has_errors()) return std::nullopt;
  DumpReader reader(o, diag);
  for (const auto& f : files) reader.read(f);
  auto& samples = reader.samples();
  if (!diag.has_errors() && samples.empty()) diag.error_global("no samples in the rollout dump");
  if (diag.has_errors() || !order_samples(samples, diag)) return std::nullopt;

  Trace trace;
  Rng rng(o.seed);
  TurnBuilder builder(o.shape);
  std::vector<Turn> turns;
  for (const Sample& s : samples) {
    builder.build(rng, {s.prompt_tokens, s.response_tokens, s.turns, std::numeric_limits<int64_t>::max()}, turns);
    for (Turn& t : turns)
      if (t.tool != kNoTool) t.tool = trace.intern_tool(o.shape.tools[static_cast<size_t>(t.tool)].name);
    trace.add({s.step, *s.sample, s.prompt_id, s.truncated}, turns);
  }
  parse::Value prov = parse::Value::make_object();
  prov.set("importer", parse::Value::make_string("arlsim trace import"));
  prov.set("format", parse::Value::make_string("rollout-jsonl"));
  parse::Value sources = parse::Value::make_array();
  for (const auto& f : files) sources.push_back(parse::Value::make_string(f.name));
  prov.set("sources", std::move(sources));
  prov.set("fields", reader.fields_used());
  if (o.chars_per_token > 0) prov.set("chars_per_token", parse::Value::make_number(o.chars_per_token));
  prov.set("seed", parse::Value::make_number(static_cast<double>(o.seed)));
  trace.header.provenance_json = to_json(prov);
  trace.header.description = "imported from a rollout dump";
  return trace;
}

}  // namespace arlsim::trace
