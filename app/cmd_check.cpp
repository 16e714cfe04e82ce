// `arlsim check FILE...`: validate inputs of any kind and print every diagnostic.
#include <cmath>
#include <set>
#include <fstream>
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/memory_limit.h"
#include "sim/report/text.h"
#include "sim/rl/step.h"
#include "sim/trace/reader.h"
#include "sim/trace/json_text.h"
#include "app/options.h"
#include "app/summaries.h"
#include "sim/model/transformer.h"
#include "sim/parse/units.h"

namespace arlsim::app {
namespace po = boost::program_options;
using nlohmann::ordered_json;

namespace {

ordered_json diagnostics_json(const input::Diagnostics& diag) {
  ordered_json out = ordered_json::array();
  for (const auto& d : diag.items()) {
    ordered_json j;
    j["severity"] = d.severity == input::Severity::error ? "error" : "warning";
    j["file"] = d.file;
    j["line"] = d.pos.line;
    j["column"] = d.pos.column;
    j["pointer"] = d.pointer;
    j["message"] = d.message;
    j["hint"] = d.hint;
    j["text"] = input::format_diagnostic(d);
    out.push_back(j);
  }
  return out;
}

ordered_json model_json(const input::ModelSpec& m, int64_t context) {
  const auto c = model::count_params(m);
  ordered_json j;
  j["name"] = m.name;
  j["family"] = m.family;
  j["source"] = m.source;
  // Counts are integers in JSON (computed as doubles: they exceed 2^31 and stay exact below 2^53).
  const auto count = [](double v) { return static_cast<int64_t>(std::llround(v)); };
  j["params_total"] = count(c.total);
  j["params_active"] = count(c.active);  // every parameter a token passes through, embeddings included
  j["params_embedding"] = count(c.embedding);
  j["params_non_embedding"] = count(c.non_embedding());
  if (m.mtp_layers > 0) j["params_mtp"] = count(c.mtp);
  j["kv_bytes_per_token"] = model::kv_bytes_per_token(m);
  j["context"] = context;
  j["flops_per_token"] = model::forward_flops_per_token(m, context);
  j["flops_per_token_causal_mean"] = model::forward_flops_per_token_causal(m, context);
  j["num_layers"] = m.num_layers;
  j["hidden_size"] = m.hidden_size;
  j["num_heads"] = m.num_heads;
  j["num_kv_heads"] = m.num_kv_heads;
  j["head_dim"] = m.head_dim;
  j["vocab_size"] = m.vocab_size;
  j["max_context"] = m.max_context;
  return j;
}

}  // namespace

namespace {

// A context-growth trace: named by --kind trace, a .jsonl name, or its first line's format.
bool is_trace(const std::string& path, const std::string& kind_text) {
  if (kind_text == "trace") return true;
  if (!kind_text.empty()) return false;
  if (path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0) return true;
  std::ifstream in(path);
  std::string first(64, '\0');
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  first.resize(static_cast<size_t>(in.gcount()));
  return first.find("\"arlsim-trace/") != std::string::npos;
}

// Checks a trace as a run reads it: every line, across lines (steps, duplicates); counts.
struct TraceCount final : trace::TraceSink {
  std::set<int64_t> steps;
  size_t trajectories = 0, turns = 0;
  void header(const trace::TraceHeader&) override {}
  void tool_kind(int16_t, std::string_view) override {}
  void trajectory(const trace::TrajectoryView& t) override {
    steps.insert(t.info.step);
    ++trajectories;
    turns += t.turns.size();
  }
};

// A scenario that parses can still not run: its first step simulated says whether a stage does
// not fit in memory or the engines thrash their KV cache. A warning: the file itself is valid.
void warn_first_step(const std::string& file, const input::ScenarioSpec& s) {
  rl::RunOptions o;
  o.timeline = false;
  o.max_steps = 1;
  input::Diagnostics diag;
  // A first step too large for this machine is not drawn (the file is valid; its run cannot be
  // here), nor one that would take minutes: check answers in seconds, and simulate runs it.
  const std::optional<double> available = available_memory_bytes();
  if (const auto m = rl::expected_run_memory(s, &o)) {
    const int64_t trajectories = m->trajectories;
    const std::string which = "its first step (step " + std::to_string(m->step) + ", " + std::to_string(trajectories) + " trajectories)";
    if (available && m->trace_bytes > *available) {
      std::cerr << file << ": warning: " << which << " is not tried: its trace needs about " << parse::format_bytes(m->trace_bytes)
                << " of memory, more than the " << parse::format_bytes(*available) << limit_origin(false) << "\n";
      return;
    }
    constexpr int64_t kMostTried = 1'000'000;
    if (trajectories > kMostTried) {
      std::cerr << file << ": note: " << which << " is not tried here; `arlsim simulate --steps " << m->step << ":" << m->step
                << "` runs it\n";
      return;
    }
  }
  const auto t = rl::load_scenario_trace(s, "", diag, &o);
  if (!t) return;  // a trace problem is the run's to report
  // A schedule entry no simulated step falls in changes nothing (a sampled trace simulates every
  // k-th step only): most likely its steps were meant otherwise.
  std::set<int64_t> steps;
  if (!s.policy.schedule.empty()) {
    rl::RunOptions whole;  // every step the run simulates, not only the first
    whole.timeline = false;
    input::Diagnostics ignored;
    if (const auto m = rl::expected_run_memory(s, &whole); !m || !available || m->trace_bytes <= *available)
      if (const auto all = rl::load_scenario_trace(s, "", ignored, &whole))
      for (size_t i = 0; i < all->size(); ++i) steps.insert(all->trajectory(i).info.step);
  }
  for (size_t e = 0; e < s.policy.schedule.size() && !steps.empty(); ++e) {
    const auto& entry = s.policy.schedule[e];
    const auto first = steps.lower_bound(entry.first_step);
    if (first != steps.end() && (entry.last_step < 0 || *first <= entry.last_step)) continue;
    std::string some;
    for (auto it = steps.begin(); it != steps.end() && std::distance(steps.begin(), it) < 6; ++it)
      some += (some.empty() ? "" : ", ") + std::to_string(*it);
    std::cerr << file << ": warning: /policy/schedule/" << e << ": no simulated step is in steps " << entry.first_step << ":"
              << (entry.last_step < 0 ? std::string() : std::to_string(entry.last_step)) << ", so it changes nothing (the steps run: "
              << some << (steps.size() > 6 ? ", ..." : "") << ")\n";
  }
  const rl::RunResult r = rl::simulate_run(s, *t, o);
  for (const auto& oom : r.oom_events)
    std::cerr << file << ": warning: step " << oom.step << ": " << oom.stage << " does not fit: it needs "
              << report::format_fixed(oom.needed_gib, 1) << (oom.host ? " GiB of host memory per node, " : " GiB per GPU, ")
              << report::format_fixed(oom.available_gib, 1) << " GiB available\n";
  for (const auto& w : r.warnings) std::cerr << file << ": warning: step " << w.step << ": " << w.message << "\n";
}

}  // namespace

int run_check(const Args& args) {
  std::vector<std::string> files, overrides;
  std::string kind_text;
  int64_t context = 4096;
  po::options_description opts("arlsim check FILE... [options]\n\n"
                               "Validates input files of any kind (model, gpu, cluster, workload, policy, scenario;\n"
                               "detected from \"format\" or the keys) and prints every diagnostic as\n"
                               "FILE:LINE:COL: /json/pointer: message. A name that is not a file is looked up among\n"
                               "the presets. Exit status: 0 all valid, 2 any invalid.\n\nOptions");
  opts.add_options()("help,h", "this text")("kind", po::value(&kind_text),
                                            "read every FILE as this kind instead of detecting it (or \"trace\": a context-growth trace, as .jsonl files are)")(
      "json", "print a JSON object per file (an array for several files) with derived figures")(
      "context", po::value(&context)->default_value(4096), "context length for flops_per_token")(
      "set", po::value(&overrides)->composing(), "override a field: /json/pointer=value (repeatable)")(
      "resolved", "print each valid document as it takes effect (references resolved, extends merged, --set applied)");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"file", -1, po::value(&files)->composing()}, vm); status >= 0)
    return status;
  if (files.empty()) {
    std::cerr << "arlsim check: no input files\n" << opts;
    return kExitBadInput;
  }
  if (context < 1 || context > (int64_t{1} << 26)) {
    std::cerr << "arlsim check: --context must be between 1 and " << (int64_t{1} << 26) << "\n";
    return kExitBadInput;
  }
  std::optional<input::SpecKind> kind;
  if (!kind_text.empty() && kind_text != "trace") {
    kind = input::kind_from_name(kind_text);
    if (!kind) {
      std::cerr << "arlsim check: unknown --kind '" << kind_text << "'; expected one of "
                << input::join_quoted(input::kind_names()) << " or \"trace\"\n";
      return kExitBadInput;
    }
  }
  if (kind_text == "trace" && (!overrides.empty() || vm.count("resolved"))) {
    std::cerr << "arlsim check: --set and --resolved apply to JSON documents, not to traces (--kind trace)\n";
    return kExitBadInput;
  }
  const bool json = vm.count("json") > 0, resolved = vm.count("resolved") > 0;
  ordered_json results = ordered_json::array();
  bool all_ok = true;
  for (const auto& f : files) {
    input::Diagnostics diag;
    if (is_trace(f, kind_text)) {
      TraceCount counted;
      const bool ok = trace::read_trace_file(f, counted, diag);
      all_ok &= ok;
      const std::string what = std::to_string(counted.steps.size()) + " steps, " + std::to_string(counted.trajectories) +
                               " trajectories, " + std::to_string(counted.turns) + " turns";
      if (!json) {
        std::cerr << input::format_all(diag);
        if (ok) std::cout << f << ": ok (trace: " << what << ")\n";
        continue;
      }
      ordered_json j{{"file", f}, {"ok", ok}};
      if (ok) j.update(ordered_json{{"kind", "trace"}, {"steps", counted.steps.size()}, {"trajectories", counted.trajectories},
                                    {"turns", counted.turns}});
      j["diagnostics"] = diagnostics_json(diag);
      results.push_back(j);
      continue;
    }
    auto doc = input::check_document(f, kind, overrides, diag);
    all_ok &= doc.has_value();
    if (!json) {
      std::cerr << input::format_all(diag);
      if (doc && resolved) std::cout << ordered_json::parse(trace::to_json(doc->document)).dump(2) << "\n";
      else if (doc) std::cout << f << ": ok (" << describe(*doc) << ")\n";
      if (doc && doc->kind == input::SpecKind::scenario) warn_first_step(f, std::get<input::ScenarioSpec>(doc->spec));
      continue;
    }
    ordered_json j;
    j["file"] = f;
    j["ok"] = doc.has_value();
    if (doc) j["kind"] = input::kind_name(doc->kind);
    if (doc && doc->kind == input::SpecKind::model) j.update(model_json(std::get<input::ModelSpec>(doc->spec), context));
    if (doc && resolved) j["resolved"] = ordered_json::parse(trace::to_json(doc->document));
    j["diagnostics"] = diagnostics_json(diag);
    results.push_back(j);
  }
  if (json) std::cout << (results.size() == 1 ? results[0] : results).dump(2) << "\n";
  return all_ok ? kExitOk : kExitBadInput;
}

}  // namespace arlsim::app
