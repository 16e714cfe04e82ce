#include "sim/trace/gen_options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "sim/parse/diagnostics.h"
#include "sim/parse/units.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
namespace {

std::string parse_int(std::string_view text, int& out, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    return "expected an integer, got \"" + std::string(text) + "\"";
  if (v < lo || v > hi) return "expected an integer between " + std::to_string(lo) + " and " + std::to_string(hi) +
                               ", got " + std::string(text);
  out = v;
  return {};
}

std::string parse_real(std::string_view text, double& out, double lo, double hi) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) return "expected a number, got \"" + s + "\"";
  if (v < lo || v > hi) return "expected a number between " + format_number(lo) + " and " + format_number(hi) + ", got " + s;
  out = v;
  return {};
}

// Token counts: "20K", "20480", "1.5K".
std::string parse_tokens(std::string_view text, double& out, double lo, double hi) {
  const parse::ParsedQuantity q = parse::parse_quantity(text, parse::Dimension::tokens);
  if (!q.error.empty()) return q.error;
  if (q.value < lo || q.value > hi) return "expected a token count between " + format_number(lo) + " and " + format_number(hi) + ", got " +
                                           std::string(text);
  out = q.value;
  return {};
}

std::string parse_growth(std::string_view text, Growth& out) {
  std::string error;
  auto g = Growth::parse(text, error);
  if (!g) return error;
  out = *g;
  return {};
}

// A growth curve whose values stay within lo..hi (token counts a trace's 32-bit fields hold).
std::string parse_growth_within(std::string_view text, Growth& out, double lo, double hi) {
  Growth g;
  if (std::string error = parse_growth(text, g); !error.empty()) return error;
  const auto [least, most] = g.bounds();
  if (!(least >= lo && most <= hi))
    return "expected values between " + format_number(lo) + " and " + format_number(hi) + ", got \"" + std::string(text) + "\"";
  out = g;
  return {};
}

std::string parse_turns_distribution(std::string_view text, TurnsDistribution& out) {
  static const std::vector<std::string> names{"fixed", "lognormal", "uniform"};
  for (size_t i = 0; i < names.size(); ++i)
    if (text == names[i]) {
      out = static_cast<TurnsDistribution>(i);
      return {};
    }
  return "unknown turns distribution \"" + std::string(text) + "\"; expected one of " + parse::join_quoted(names);
}

std::string turns_distribution_name(TurnsDistribution d) {
  switch (d) {
    case TurnsDistribution::fixed: return "fixed";
    case TurnsDistribution::lognormal: return "lognormal";
    case TurnsDistribution::uniform: return "uniform";
  }
  return "";
}

std::string add_tool(GenParams& p, std::string_view text) {
  if (text == "none") {
    p.tools.clear();
    return {};
  }
  std::string error;
  auto tool = parse_tool_spec(text, error);
  if (!tool) return error;
  for (const auto& t : p.tools)
    if (t.name == tool->name) return "tool \"" + tool->name + "\" is given twice";
  p.tools.push_back(*tool);
  return {};
}

constexpr int kMaxCount = 1 << 24;

const GenOption kOptions[] = {
    {"seed", "seed of the random draws (same seed, same trace)",
     [](GenParams& p, std::string_view v) {
       const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), p.seed);
       if (ec == std::errc() && end == v.data() + v.size()) return std::string();
       return "expected a non-negative integer, got \"" + std::string(v) + "\"";
     },
     [](const GenParams& p) { return std::to_string(p.seed); }},
    {"steps", "training steps in the run",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.steps, 1, 1'000'000); },
     [](const GenParams& p) { return std::to_string(p.steps); }},
    {"first-step", "number of the first step",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.first_step, 0, 1'000'000'000); },
     [](const GenParams& p) { return std::to_string(p.first_step); }},
    {"every", "write every k-th step only (the growth curves still span the whole run)",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.every, 1, 1'000'000); },
     [](const GenParams& p) { return std::to_string(p.every); }},
    {"prompts-per-step", "prompts (groups) per step",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.prompts_per_step, 1, kMaxCount); },
     [](const GenParams& p) { return std::to_string(p.prompts_per_step); }},
    {"group-size", "samples per prompt (the GRPO group)",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.group_size, 1, kMaxCount); },
     [](const GenParams& p) { return std::to_string(p.group_size); }},
    {"prompt-tokens", "mean prompt length in tokens (one length per group)",
     [](GenParams& p, std::string_view v) { return parse_tokens(v, p.prompt_tokens, 1, 1 << 24); },
     [](const GenParams& p) { return format_number(p.prompt_tokens); }},
    {"prompt-sigma", "log-normal spread of prompt lengths",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.prompt_sigma, 0, 3); },
     [](const GenParams& p) { return format_number(p.prompt_sigma); }},
    {"prompt-limit", "longest prompt in tokens",
     [](GenParams& p, std::string_view v) {
       double t = 0;
       std::string e = parse_tokens(v, t, 1, 1 << 24);
       if (e.empty()) p.prompt_limit = std::llround(t);
       return e;
     },
     [](const GenParams& p) { return std::to_string(p.prompt_limit); }},
    {"response-mean", "mean response tokens over the steps, before limits unless --response-mean-is says otherwise (a growth curve, see below)",
     [](GenParams& p, std::string_view v) { return parse_growth_within(v, p.response_mean, 0, 1 << 24); },
     [](const GenParams& p) { return p.response_mean.to_string(); }},
    {"response-mean-is", "before-limits: the mean of the length distribution; after-limits: the mean of the responses "
                         "as written, once the limits cut them (what a run's logs report)",
     [](GenParams& p, std::string_view v) {
       if (v == "before-limits" || v == "after-limits") {
         p.response_mean_after_limits = v == "after-limits";
         return std::string();
       }
       return "expected \"before-limits\" or \"after-limits\", got \"" + std::string(v) + "\"";
     },
     [](const GenParams& p) { return std::string(p.response_mean_after_limits ? "after-limits" : "before-limits"); }},
    {"response-limit", "longest response in tokens over the steps (\"8K,16K@100\" raises it at step 100)",
     [](GenParams& p, std::string_view v) { return parse_growth_within(v, p.response_limit, 1, 1 << 24); },
     [](const GenParams& p) { return p.response_limit.to_string(); }},
    {"context-limit", "longest prompt + response in tokens over the steps; 0 for none",
     [](GenParams& p, std::string_view v) { return parse_growth_within(v, p.context_limit, 0, 1 << 25); },
     [](const GenParams& p) { return p.context_limit.to_string(); }},
    {"length-sigma", "log-normal spread of response lengths within a step (the body)",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.shape.sigma, 0, 3); },
     [](const GenParams& p) { return format_number(p.shape.sigma); }},
    {"tail-weight", "share of responses in the Pareto tail within a step",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.shape.tail_weight, 0, 0.5); },
     [](const GenParams& p) { return format_number(p.shape.tail_weight); }},
    {"tail-alpha", "Pareto index of the tail (> 1; smaller is heavier)",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.shape.tail_alpha, 1.05, 100); },
     [](const GenParams& p) { return format_number(p.shape.tail_alpha); }},
    {"group-correlation", "correlation of the lengths of two samples of one prompt (0..1)",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.group_correlation, 0, 1); },
     [](const GenParams& p) { return format_number(p.group_correlation); }},
    {"turns-mean", "mean turns per trajectory over the steps (a growth curve)",
     [](GenParams& p, std::string_view v) { return parse_growth_within(v, p.turns_mean, 1, 100'000); },
     [](const GenParams& p) { return p.turns_mean.to_string(); }},
    {"turns-dist", "turns per trajectory: fixed (the mean), lognormal (around the mean), uniform (min..max)",
     [](GenParams& p, std::string_view v) { return parse_turns_distribution(v, p.turns_distribution); },
     [](const GenParams& p) { return turns_distribution_name(p.turns_distribution); }},
    {"turns-sigma", "log-normal spread of turn counts",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.turns_sigma, 0, 3); },
     [](const GenParams& p) { return format_number(p.turns_sigma); }},
    {"turns-min", "fewest turns per trajectory",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.turns_min, 1, 100'000); },
     [](const GenParams& p) { return std::to_string(p.turns_min); }},
    {"turns-max", "most turns per trajectory",
     [](GenParams& p, std::string_view v) { return parse_int(v, p.turns_max, 1, 100'000); },
     [](const GenParams& p) { return std::to_string(p.turns_max); }},
    {"turns-length-correlation", "correlation of a trajectory's turn count with its length (0..1)",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.turns_length_correlation, 0, 1); },
     [](const GenParams& p) { return format_number(p.turns_length_correlation); }},
    {"tool", "a tool kind, repeatable: \"NAME: dist=lognormal mean=0.8s sigma=0.6 cold_start=5s cold_start_prob=0.5 "
             "timeout=120s share=1 obs_tokens=300\"; \"none\" clears the list",
     add_tool, [](const GenParams&) { return std::string(); }},
    {"obs-tokens", "mean observation tokens per tool call (a tool's obs_tokens overrides it)",
     [](GenParams& p, std::string_view v) { return parse_tokens(v, p.obs_tokens, 0, 1 << 24); },
     [](const GenParams& p) { return format_number(p.obs_tokens); }},
    {"obs-sigma", "log-normal spread of observation sizes",
     [](GenParams& p, std::string_view v) { return parse_real(v, p.obs_sigma, 0, 3); },
     [](const GenParams& p) { return format_number(p.obs_sigma); }},
    {"turn-prefill-tokens", "tokens added before each turn after the first (chat template, user text)",
     [](GenParams& p, std::string_view v) {
       double t = 0;
       std::string e = parse_tokens(v, t, 0, 1 << 20);
       if (e.empty()) p.turn_prefill_tokens = std::llround(t);
       return e;
     },
     [](const GenParams& p) { return std::to_string(p.turn_prefill_tokens); }},
};

}  // namespace

std::span<const GenOption> gen_options() { return kOptions; }

const GenOption* find_gen_option(std::string_view name) {
  for (const auto& o : kOptions)
    if (o.name == name) return &o;
  return nullptr;
}

std::vector<std::string> apply_gen_options(GenParams& p, const std::vector<std::pair<std::string, std::string>>& options) {
  std::vector<std::string> problems;
  bool tools_replaced = false;
  for (const auto& [name, value] : options) {
    const GenOption* o = find_gen_option(name);
    if (!o) {
      problems.push_back("unknown generator option \"" + name + "\"");
      continue;
    }
    if (name == "tool" && !tools_replaced) {
      p.tools.clear();
      tools_replaced = true;
    }
    problems.push_back(o->set(p, value));
  }
  return problems;
}

GenParams preset_params(const GenPreset& preset) {
  GenParams p;
  for (const auto& [name, value] : preset.settings) {
    const GenOption* o = find_gen_option(name);
    if (o) o->set(p, value);
  }
  p.preset = std::string(preset.name);
  return p;
}

parse::Value gen_parameters_json(const GenParams& p) {
  parse::Value params = parse::Value::make_object();
  for (const auto& o : kOptions) {
    if (o.name == "tool") {
      parse::Value tools = parse::Value::make_array();
      for (const auto& t : p.tools) tools.push_back(parse::Value::make_string(tool_spec_text(t)));
      params.set("tool", std::move(tools));
      continue;
    }
    const std::string text = o.get(p);
    // Plain numbers are written as JSON numbers (while a double holds them exactly), everything
    // else as the text a flag takes.
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    const bool plain = !text.empty() && end == text.c_str() + text.size() && std::isfinite(d) &&
                       text.find_first_of("xXnNiI") == std::string::npos;
    params.set(std::string(o.name), plain && d <= 0x1p53 ? parse::Value::make_number(d) : parse::Value::make_string(text));
  }
  return params;
}

TraceHeader gen_header(const GenParams& p) {
  parse::Value prov = parse::Value::make_object();
  prov.set("generator", parse::Value::make_string("arlsim trace gen"));
  if (!p.preset.empty()) prov.set("preset", parse::Value::make_string(p.preset));
  prov.set("parameters", gen_parameters_json(p));
  TraceHeader h;
  h.provenance_json = to_json(prov);
  if (const GenPreset* preset = find_gen_preset(p.preset)) h.description = std::string(preset->description);
  return h;
}

}  // namespace arlsim::trace
