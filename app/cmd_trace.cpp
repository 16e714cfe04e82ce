// `arlsim trace gen|import|stats`: make context-growth traces (from a generator, a dashboard's
// per-step summary CSV or a rollout dump) and look at them. The work is in sim/trace/; this file
// turns flags into its parameters and prints results.
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "app/options.h"
#include "sim/trace/gen_options.h"
#include "sim/trace/import_rollout.h"
#include "sim/trace/import_summary.h"
#include "sim/trace/reader.h"
#include "sim/trace/stats_report.h"
#include "sim/trace/writer.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

constexpr const char* kGrowthHelp =
    "Growth curves (--response-mean, --turns-mean, limits) over the run's steps:\n"
    "  2K                                 constant (token counts take K = 1024)\n"
    "  linear 1K..4K                      straight line from the first step to the last\n"
    "  logistic 1K..12K mid=100 width=20  S-curve centred on step 100\n"
    "  saturating 1K..12K tau=50          fast early growth that levels off\n"
    "  8K,16K@100,24K@150                 step changes at steps 100 and 150\n";

int report(const parse::Diagnostics& diag, int status_if_errors = kExitBadInput) {
  std::cerr << parse::format_all(diag);
  return diag.has_errors() ? status_if_errors : kExitOk;
}

// Counts what passes through on its way to another sink.
class CountingSink final : public trace::TraceSink {
 public:
  explicit CountingSink(trace::TraceSink& next) : next_(next) {}
  void header(const trace::TraceHeader& h) override { next_.header(h); }
  void tool_kind(int16_t i, std::string_view name) override { next_.tool_kind(i, name); }
  void trajectory(const trace::TrajectoryView& t) override {
    if (trajectories_ == 0 || t.info.step != last_step_) ++steps_;
    last_step_ = t.info.step;
    ++trajectories_;
    turns_ += t.turns.size();
    next_.trajectory(t);
  }
  std::string summary() const {
    return std::to_string(steps_) + " steps, " + std::to_string(trajectories_) + " trajectories, " +
           std::to_string(turns_) + " turns";
  }

 private:
  trace::TraceSink& next_;
  size_t steps_ = 0, trajectories_ = 0, turns_ = 0;
  int32_t last_step_ = 0;
};

bool write_out(const trace::Trace& t, const std::string& out, parse::Diagnostics& diag) {
  if (!trace::write_trace(t, out, diag)) return false;
  (out == "-" ? std::cerr : std::cout) << "wrote " << out << ": " << t.size() << " trajectories, " << t.turn_count()
                                       << " turns\n";
  return true;
}

bool read_file(const std::string& path, std::string& text, parse::Diagnostics& diag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    diag.error_global(path + ": is a directory, not a file to import");
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diag.error_global(path + ": no such file");
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

// "A=B" -> {A, B}; reports a value without '='.
bool split_assignments(const std::vector<std::string>& items, const std::string& flag,
                       std::vector<std::pair<std::string, std::string>>& out, parse::Diagnostics& diag) {
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      diag.error_global(flag + ": expected ROLE=NAME, got " + parse::quote(item));
      continue;
    }
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return !diag.has_errors();
}

// ---- gen ----

std::string gen_help_defaults() {
  const trace::GenParams defaults;
  std::string out;
  for (const auto& o : trace::gen_options()) {
    std::string flag = "  --" + std::string(o.name) + " ";
    flag.resize(32, ' ');
    const std::string def = o.get(defaults);
    out += flag + std::string(o.help) + (def.empty() ? "" : " [" + def + "]") + "\n";
  }
  return out;
}

int list_presets() {
  for (const auto& p : trace::gen_presets()) {
    std::cout << p.name << ": " << p.description << "\n  mimics: " << p.facts << "\n  flags:";
    for (const auto& [name, value] : p.settings) {
      const bool spaced = std::string_view(value).find(' ') != std::string_view::npos;
      std::cout << " --" << name << " " << (spaced ? "\"" + std::string(value) + "\"" : std::string(value));
    }
    std::cout << "\n\n";
  }
  return kExitOk;
}

// Preset, then the flags in the order of the option list; every bad value is reported.
bool gen_params_from(const po::variables_map& vm, const std::string& preset, trace::GenParams& p,
                     parse::Diagnostics& diag) {
  if (!preset.empty()) {
    const trace::GenPreset* found = trace::find_gen_preset(preset);
    if (!found) {
      const std::string guess = parse::closest_match(preset, trace::gen_preset_names());
      diag.error_global("--preset: unknown preset " + parse::quote(preset) + "; expected one of " +
                            parse::join_quoted(trace::gen_preset_names(), ", "),
                        guess.empty() ? "" : "did you mean " + parse::quote(guess) + "?");
      return false;
    }
    p = trace::preset_params(*found);
  }
  for (const auto& o : trace::gen_options()) {
    const std::string name(o.name);
    if (!vm.count(name)) continue;
    std::vector<std::string> values;
    if (name == "tool") {
      values = vm[name].as<std::vector<std::string>>();
      p.tools.clear();  // tools given on the command line replace the preset's
    } else {
      values.push_back(vm[name].as<std::string>());
    }
    for (const auto& v : values)
      if (std::string e = o.set(p, v); !e.empty()) diag.error_global("--" + name + ": " + e);
  }
  for (const auto& problem : trace::check_gen_params(p)) diag.error_global(problem);
  return !diag.has_errors();
}

int run_gen(const Args& args) {
  std::string out, preset;
  po::options_description opts(
      "arlsim trace gen [--preset NAME] [--PARAMETER VALUE ...] --out FILE.jsonl\n\n"
      "Generates a synthetic context-growth trace. The same parameters and seed give the same file,\n"
      "byte for byte. Flags override the preset's settings; --tool flags replace its tools.\n\nOptions");
  opts.add_options()("help,h", "this text")("out,o", po::value(&out), "output trace (- for standard output)")(
      "preset", po::value(&preset), "start from a preset (see --list-presets)")("list-presets",
                                                                                 "list the presets and their flags");
  po::options_description params("Parameters [default]");
  for (const auto& o : trace::gen_options()) {
    if (o.name == "tool") params.add_options()("tool", po::value<std::vector<std::string>>()->composing(), "");
    else params.add_options()(std::string(o.name).c_str(), po::value<std::string>(), "");
  }
  po::options_description visible;
  visible.add(opts).add(params);
  const std::string help = "\nParameters [default]:\n" + gen_help_defaults() + "\n" + std::string(kGrowthHelp) +
                           "\nPresets: " + parse::join_quoted(trace::gen_preset_names(), ", ") + "\n";
  po::variables_map vm;
  if (int status = parse_options(args, visible, std::nullopt, vm, help, &opts); status >= 0) return status;
  if (vm.count("list-presets")) return list_presets();
  parse::Diagnostics diag;
  if (out.empty()) diag.error_global("--out: required (the trace file to write, or - for standard output)");
  trace::GenParams p;
  if (!gen_params_from(vm, preset, p, diag) || diag.has_errors()) return report(diag);
  trace::TraceWriter writer;
  if (!writer.open(out, diag)) return report(diag);
  CountingSink counter(writer);
  trace::generate(p, counter);
  if (!writer.close(diag)) return report(diag, kExitInternal);
  (out == "-" ? std::cerr : std::cout) << "wrote " << out << ": " << counter.summary() << "\n";
  return kExitOk;
}

// ---- import ----

struct ImportFlags {
  std::vector<std::string> inputs, columns, fields, tools;
  std::string out, format, obs_tokens = "256", obs_sigma = "0.8", turn_prefill = "0";
  int prompts_per_step = 0, group_size = 0;
  uint64_t seed = 1;
  double default_sigma = 0.6, group_correlation = 0.5, prompt_tokens = 512, chars_per_token = 0;
};

// Tools and observation settings, read through the generator's own option parsers.
bool turn_shape(const ImportFlags& f, trace::TurnShape& shape, parse::Diagnostics& diag) {
  trace::GenParams p;
  const std::pair<const char*, const std::string*> settings[] = {
      {"obs-tokens", &f.obs_tokens}, {"obs-sigma", &f.obs_sigma}, {"turn-prefill-tokens", &f.turn_prefill}};
  for (const auto& [name, value] : settings)
    if (std::string e = trace::find_gen_option(name)->set(p, *value); !e.empty())
      diag.error_global("--" + std::string(name) + ": " + e);
  for (const auto& t : f.tools)
    if (std::string e = trace::find_gen_option("tool")->set(p, t); !e.empty()) diag.error_global("--tool: " + e);
  shape = trace::TurnShape{p.tools, p.obs_tokens, p.obs_sigma, p.turn_prefill_tokens};
  return !diag.has_errors();
}

std::optional<trace::Trace> import_summary(const ImportFlags& f, const trace::TurnShape& shape,
                                           parse::Diagnostics& diag) {
  if (f.inputs.size() != 1) diag.error_global("a summary CSV import takes one file");
  if (f.prompts_per_step < 1) diag.error_global("--prompts-per-step: required for a summary CSV (at least 1)");
  if (f.group_size < 1) diag.error_global("--group-size: required for a summary CSV (at least 1)");
  if (f.group_correlation < 0 || f.group_correlation > 1) diag.error_global("--group-correlation: expected 0..1");
  if (f.default_sigma < 0.01 || f.default_sigma > 3) diag.error_global("--default-sigma: expected 0.01..3");
  trace::SummaryImportOptions o;
  if (!split_assignments(f.columns, "--column", o.columns, diag) || diag.has_errors()) return std::nullopt;
  std::string text;
  if (!read_file(f.inputs[0], text, diag)) return std::nullopt;
  o.prompts_per_step = f.prompts_per_step;
  o.group_size = f.group_size;
  o.seed = f.seed;
  o.default_sigma = f.default_sigma;
  o.group_correlation = f.group_correlation;
  o.prompt_tokens = f.prompt_tokens;
  o.shape = shape;
  return trace::import_summary_csv(text, f.inputs[0], o, diag);
}

std::optional<trace::Trace> import_rollout(const ImportFlags& f, const trace::TurnShape& shape,
                                           parse::Diagnostics& diag) {
  if (f.chars_per_token < 0) diag.error_global("--chars-per-token: must be positive");
  trace::RolloutImportOptions o;
  if (!split_assignments(f.fields, "--field", o.fields, diag) || diag.has_errors()) return std::nullopt;
  std::vector<trace::NamedText> files;
  for (const auto& path : f.inputs) {
    files.push_back({path, {}});
    read_file(path, files.back().text, diag);
  }
  if (diag.has_errors()) return std::nullopt;
  o.chars_per_token = f.chars_per_token;
  o.group_size = f.group_size;
  o.seed = f.seed;
  o.shape = shape;
  return trace::import_rollout_jsonl(files, o, diag);
}

std::string role_help() {
  std::string out = "Summary CSV roles (--column ROLE=COLUMN; known column names are found without it):\n";
  for (const auto& r : trace::summary_roles()) {
    std::string name = "  " + std::string(r.name);
    name.resize(24, ' ');
    out += name + std::string(r.description) + " (" + std::string(r.aliases.front()) + ")\n";
  }
  out += "\nRollout dump roles (--field ROLE=FIELD, FIELD may be a JSON pointer such as /meta/len):\n";
  for (const auto& r : trace::rollout_roles()) {
    std::string name = "  " + std::string(r.name);
    name.resize(24, ' ');
    std::string aliases;
    for (auto a : r.aliases) aliases += (aliases.empty() ? "" : ", ") + std::string(a);
    for (auto a : r.text_aliases) aliases += ", " + std::string(a) + " (text)";
    out += name + std::string(r.description) + "\n" + std::string(24, ' ') + "looks for: " + aliases + "\n";
  }
  return out;
}

int run_import(const Args& args) {
  ImportFlags f;
  po::options_description opts(
      "arlsim trace import FILE.csv --prompts-per-step N --group-size N --out FILE.jsonl [options]\n"
      "arlsim trace import DUMP.jsonl... --out FILE.jsonl [options]\n\n"
      "Turns a per-step summary CSV (a dashboard export) or rollout dumps (one sample per JSONL line)\n"
      "into a trace. The format follows the extension (.csv: summary; .jsonl/.json: dump) unless\n"
      "--format says otherwise.\n\nOptions");
  opts.add_options()("help,h", "this text")("out,o", po::value(&f.out), "output trace (- for standard output)")(
      "format", po::value(&f.format), "summary-csv or rollout-jsonl")(
      "prompts-per-step", po::value(&f.prompts_per_step), "CSV: prompts each step expands into")(
      "group-size", po::value(&f.group_size),
      "CSV: samples per prompt; dump: consecutive samples per prompt when lines have no prompt id")(
      "column", po::value(&f.columns)->composing(), "CSV: ROLE=COLUMN for a column with another name (repeatable)")(
      "default-sigma", po::value(&f.default_sigma)->default_value(0.6, "0.6"),
      "CSV: log-normal spread when a step has no std, max or min")(
      "group-correlation", po::value(&f.group_correlation)->default_value(0.5, "0.5"), "CSV: of the lengths within a group")(
      "prompt-tokens", po::value(&f.prompt_tokens)->default_value(512), "CSV: mean prompt when the CSV has none")(
      "field", po::value(&f.fields)->composing(), "dump: ROLE=FIELD for a field with another name (repeatable)")(
      "chars-per-token", po::value(&f.chars_per_token)->default_value(0),
      "dump: estimate tokens of text fields as characters / this (0: text is an error)")(
      "seed", po::value(&f.seed)->default_value(1), "seed of the draws (CSV expansion, turn splits)")(
      "tool", po::value(&f.tools)->composing(), "tool kind of multi-turn trajectories (as in trace gen)")(
      "obs-tokens", po::value(&f.obs_tokens), "mean observation tokens per tool call [256]")(
      "obs-sigma", po::value(&f.obs_sigma), "log-normal spread of observations [0.8]")(
      "turn-prefill-tokens", po::value(&f.turn_prefill), "tokens added before each later turn [0]");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"input", -1, po::value(&f.inputs)->composing()}, vm,
                                 "\n" + role_help());
      status >= 0)
    return status;
  parse::Diagnostics diag;
  if (f.inputs.empty()) diag.error_global("no input file");
  if (f.out.empty()) diag.error_global("--out: required (the trace file to write, or - for standard output)");
  else if (f.out != "-")  // before reading the inputs, which can be large
    if (const std::string problem = output_file_problem(f.out); !problem.empty()) diag.error_global("--out: " + problem);
  std::string format = f.format;
  if (format.empty() && !f.inputs.empty()) format = f.inputs[0].ends_with(".csv") ? "summary-csv" : "rollout-jsonl";
  if (!format.empty() && format != "summary-csv" && format != "rollout-jsonl")
    diag.error_global("--format: unknown format " + parse::quote(format) + "; expected \"summary-csv\" or \"rollout-jsonl\"");
  trace::TurnShape shape;
  if (!turn_shape(f, shape, diag) || diag.has_errors()) return report(diag);
  auto t = format == "summary-csv" ? import_summary(f, shape, diag) : import_rollout(f, shape, diag);
  if (!t) return report(diag);
  std::cerr << parse::format_all(diag);  // warnings
  parse::Diagnostics out_diag;
  if (!write_out(*t, f.out, out_diag)) return report(out_diag, kExitInternal);
  return kExitOk;
}

// ---- stats ----

int run_stats(const Args& args) {
  std::string input, svg;
  double decode_rate = 40;
  po::options_description opts(
      "arlsim trace stats TRACE.jsonl [--json] [--svg FILE]\n\n"
      "Checks a trace and prints per-step percentiles of response and context tokens and turns,\n"
      "the growth from the first to the last step, tail ratios (p99/p50, max/median) and the tool\n"
      "time share.\n\nOptions");
  opts.add_options()("help,h", "this text")("json", "print a JSON list of steps instead of the table")(
      "svg", po::value(&svg), "also write an SVG chart of the growth curves")(
      "allow-truncated", "ignore a last line cut off in the middle (a trace still being written)")(
      "decode-rate", po::value(&decode_rate)->default_value(40),
      "tokens/s per sequence assumed for the tool time share (a yardstick; the simulator computes times)");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"input", 1, po::value(&input)}, vm); status >= 0)
    return status;
  parse::Diagnostics diag;
  if (input.empty()) diag.error_global("no trace file");
  if (!(decode_rate > 0)) diag.error_global("--decode-rate: must be positive");
  if (diag.has_errors()) return report(diag);
  trace::ReadOptions read_options;
  read_options.allow_truncated_last_line = vm.count("allow-truncated") > 0;
  trace::StatsCollector collector(decode_rate);
  const bool ok = trace::read_trace_file(input, collector, diag, read_options);
  std::cerr << parse::format_all(diag);
  if (!ok) return kExitBadInput;
  const trace::TraceStats stats = collector.finish();
  std::cout << (vm.count("json") ? trace::stats_json(stats) : trace::stats_table(stats, input));
  if (!svg.empty()) {
    std::ofstream file(svg, std::ios::binary);
    if (!file) {
      std::cerr << svg << ": cannot be written\n";
      return kExitBadInput;
    }
    file << trace::stats_svg(stats, input);
    if (!file.flush()) {
      std::cerr << svg << ": write failed\n";
      return kExitInternal;
    }
  }
  return kExitOk;
}

}  // namespace

int run_trace(const Args& args) {
  static const std::pair<std::string_view, int (*)(const Args&)> kSubcommands[] = {
      {"gen", run_gen}, {"import", run_import}, {"stats", run_stats}};
  const std::string usage =
      "usage: arlsim trace gen|import|stats ...\n\n"
      "  gen     generate a synthetic context-growth trace (presets: " +
      parse::join_quoted(trace::gen_preset_names(), ", ") +
      ")\n"
      "  import  make a trace from a per-step summary CSV or rollout dumps\n"
      "  stats   check a trace and print its per-step statistics (--json, --svg)\n\n"
      "`arlsim trace SUBCOMMAND --help` lists a subcommand's options; traces/README.md has the format.\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << usage;
    return args.empty() ? kExitBadInput : kExitOk;
  }
  for (const auto& [name, run] : kSubcommands)
    if (args[0] == name) return run(Args(args.begin() + 1, args.end()));
  std::cerr << "arlsim trace: unknown subcommand '" << args[0] << "'\n\n" << usage;
  return kExitBadInput;
}

}  // namespace arlsim::app
