#include "sim/trace/import_summary.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "sim/trace/csv.h"
#include "sim/trace/fit.h"
#include "sim/trace/json_text.h"
#include "sim/trace/random.h"

namespace arlsim::trace {
namespace {

enum Role { kStep, kRespMean, kRespMax, kRespMin, kRespStd, kRespClip, kPromptMean, kPromptMax, kPromptMin,
            kTurnsMean, kTurnsMax, kTurnsMin, kRoleCount };

constexpr double kPromptSigma = 0.4;       // prompt spread when the CSV gives no prompt bounds
constexpr double kTurnsSigma = 0.4;        // turn-count spread when it gives no turn bounds
constexpr double kTurnsLengthCorr = 0.5;   // longer trajectories take more turns
constexpr double kMaxTokens = std::numeric_limits<int32_t>::max();  // what a trace holds per field
constexpr double kMaxTurns = 100'000;
// Expanded traces are held in memory: beyond this many trajectories, use fewer prompts per step.
constexpr double kMaxTrajectories = 200e6;

struct StepRow {
  uint32_t line = 0;
  int32_t step = 0;
  Moments response;
  std::optional<Moments> prompt;
  std::optional<Moments> turns;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// W&B exports name columns "RUN - metric" and add "metric__MIN"/"__MAX" envelope columns.
std::string normalize(std::string_view column) {
  const size_t dash = column.rfind(" - ");
  if (dash != std::string_view::npos) column = column.substr(dash + 3);
  while (!column.empty() && column.front() == ' ') column.remove_prefix(1);
  while (!column.empty() && column.back() == ' ') column.remove_suffix(1);
  return lower(column);
}

bool is_envelope(const std::string& normalized) {
  return normalized.ends_with("__min") || normalized.ends_with("__max");
}

bool matches_alias(const std::string& normalized, std::string_view alias) {
  // Frameworks prefix metrics ("train/response_length/mean"): a "/"-separated suffix matches too.
  return normalized == alias ||
         (normalized.size() > alias.size() && normalized.ends_with(alias) &&
          normalized[normalized.size() - alias.size() - 1] == '/');
}

void error(parse::Diagnostics& diag, const std::string& file, uint32_t line, std::string message, std::string hint = {}) {
  diag.add({parse::Severity::error, file, {line, 0}, "", std::move(message), std::move(hint)});
}

// Role -> column index (-1 when absent): --column choices first, then the aliases.
bool map_columns(const CsvTable& table, const SummaryImportOptions& options, const std::string& file,
                 std::array<int, kRoleCount>& index, parse::Diagnostics& diag) {
  const auto& roles = summary_roles();
  index.fill(-1);
  const size_t errors = diag.error_count();
  std::vector<std::string> role_names, column_names;
  for (const auto& r : roles) role_names.emplace_back(r.name);
  for (const auto& c : table.columns) column_names.push_back(c);
  for (const auto& [role, column] : options.columns) {
    const auto r = std::find(role_names.begin(), role_names.end(), role);
    const auto c = std::find(column_names.begin(), column_names.end(), column);
    if (r == role_names.end()) {
      const std::string guess = parse::closest_match(role, role_names);
      diag.error_global("--column: unknown role " + parse::quote(role) + "; expected one of " +
                            parse::join_quoted(role_names, ", "),
                        guess.empty() ? "" : "did you mean " + parse::quote(guess) + "?");
    } else if (c == column_names.end()) {
      const std::string guess = parse::closest_match(column, column_names);
      diag.error_global("--column: " + file + " has no column " + parse::quote(column),
                        guess.empty() ? "" : "did you mean " + parse::quote(guess) + "?");
    } else {
      index[static_cast<size_t>(r - role_names.begin())] = static_cast<int>(c - column_names.begin());
    }
  }
  for (size_t r = 0; r < roles.size(); ++r) {
    if (index[r] >= 0) continue;
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const std::string n = normalize(table.columns[c]);
      if (is_envelope(n)) continue;
      bool hit = false;
      for (auto alias : roles[r].aliases) hit |= matches_alias(n, alias);
      if (!hit) continue;
      if (index[r] >= 0) {
        error(diag, file, 1,
              "columns " + parse::quote(table.columns[static_cast<size_t>(index[r])]) + " and " +
                  parse::quote(table.columns[c]) + " both look like " + std::string(roles[r].name),
              "choose one with --column " + std::string(roles[r].name) + "=COLUMN");
        break;
      }
      index[r] = static_cast<int>(c);
    }
  }
  for (Role required : {kStep, kRespMean}) {
    if (index[required] >= 0) continue;
    std::string aliases;
    for (auto a : roles[required].aliases) aliases += (aliases.empty() ? "" : ", ") + std::string(a);
    error(diag, file, 1, "no column for " + std::string(roles[required].name) + " (looked for " + aliases + ")",
          "name it with --column " + std::string(roles[required].name) + "=COLUMN");
  }
  return diag.error_count() == errors;
}

// A cell as a number; nullopt for an empty cell (dashboards leave gaps), error on text.
bool cell_number(const CsvRow& row, int column, const std::string& column_name, const std::string& file,
                 std::optional<double>& out, parse::Diagnostics& diag) {
  out.reset();
  if (column < 0) return true;
  std::string text = row.cells[static_cast<size_t>(column)];
  text.erase(0, text.find_first_not_of(" \t"));
  text.erase(text.find_last_not_of(" \t") + 1);
  const std::string l = lower(text);
  if (text.empty() || l == "nan" || l == "null" || l == "none") return true;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    error(diag, file, row.line, "column " + parse::quote(column_name) + ": expected a non-negative number, got " +
                                    parse::quote(text));
    return false;
  }
  out = v;
  return true;
}

std::optional<Moments> moments(const std::array<std::optional<double>, kRoleCount>& v, Role mean, Role min, Role max) {
  if (!v[mean]) return std::nullopt;
  Moments m;
  m.mean = *v[mean];
  m.min = v[min];
  m.max = v[max];
  return m;
}

bool check_bounds(const Moments& m, const std::string& what, double largest, const std::string& file,
                  uint32_t line, parse::Diagnostics& diag) {
  if (std::max(m.mean, m.max.value_or(0)) > largest) {
    error(diag, file, line, what + " above " + std::to_string(static_cast<int64_t>(largest)) + " is not supported");
    return false;
  }
  const double slack = 1e-6 * std::max(1.0, m.mean);
  if ((m.min && *m.min > m.mean + slack) || (m.max && *m.max < m.mean - slack)) {
    error(diag, file, line, what + " mean " + std::to_string(std::llround(m.mean)) + " lies outside its min/max");
    return false;
  }
  return true;
}

bool read_row(const CsvRow& row, const CsvTable& table, const std::array<int, kRoleCount>& index,
              const std::string& file, StepRow& out, parse::Diagnostics& diag) {
  std::array<std::optional<double>, kRoleCount> v;
  bool ok = true;
  for (size_t r = 0; r < kRoleCount; ++r) {
    const std::string name = index[r] >= 0 ? table.columns[static_cast<size_t>(index[r])] : std::string();
    ok &= cell_number(row, index[r], name, file, v[r], diag);
  }
  if (!ok) return false;
  out.line = row.line;
  if (!v[kStep] || *v[kStep] != std::floor(*v[kStep]) || *v[kStep] > std::numeric_limits<int32_t>::max()) {
    error(diag, file, row.line, "the step must be a whole number, got " +
                                    (v[kStep] ? std::to_string(*v[kStep]) : std::string("an empty cell")));
    return false;
  }
  out.step = static_cast<int32_t>(*v[kStep]);
  out.response = *moments(v, kRespMean, kRespMin, kRespMax);
  out.response.std = v[kRespStd];
  out.response.clip_ratio = v[kRespClip].value_or(0);
  out.prompt = moments(v, kPromptMean, kPromptMin, kPromptMax);
  out.turns = moments(v, kTurnsMean, kTurnsMin, kTurnsMax);
  ok = check_bounds(out.response, "response length", kMaxTokens, file, row.line, diag);
  if (out.prompt) ok &= check_bounds(*out.prompt, "prompt length", kMaxTokens, file, row.line, diag);
  if (out.turns) ok &= check_bounds(*out.turns, "turn count", kMaxTurns, file, row.line, diag);
  if (out.response.clip_ratio > 1) {
    error(diag, file, row.line, "the clip ratio must be between 0 and 1");
    ok = false;
  }
  if (out.response.clip_ratio > 0 && !out.response.max) {
    error(diag, file, row.line, "a clip ratio needs the maximum response length (the limit)");
    ok = false;
  }
  return ok;
}

parse::Value fit_json(const LognormalFit& fit) {
  parse::Value o = parse::Value::make_object();
  o.set("sigma", parse::Value::make_number(std::round(fit.sigma * 1e4) / 1e4));
  o.set("from", parse::Value::make_string(fit.basis));
  return o;
}

// Expands one step into P x G trajectories appended to `trace`; returns the step's fit record.
parse::Value expand_step(const StepRow& row, const SummaryImportOptions& o, Rng& rng, TurnBuilder& builder,
                        Trace& trace, bool& mean_reached) {
  const size_t prompts = static_cast<size_t>(o.prompts_per_step), n = prompts * static_cast<size_t>(o.group_size);
  const Moments pm = row.prompt.value_or(Moments{o.prompt_tokens, {}, {}, {}, 0});
  const LognormalFit pfit = fit_lognormal(pm, prompts, kPromptSigma);
  std::vector<double> latents(prompts);
  for (double& z : latents) z = rng.normal();
  const FittedBatch prompt = draw_fitted(pm, pfit, latents, 1);

  const double shared = std::sqrt(o.group_correlation), own = std::sqrt(1 - o.group_correlation);
  latents.resize(n);
  for (size_t p = 0; p < prompts; ++p) {
    const double g = rng.normal();
    for (size_t k = 0; k < static_cast<size_t>(o.group_size); ++k)
      latents[p * static_cast<size_t>(o.group_size) + k] = shared * g + own * rng.normal();
  }
  const LognormalFit rfit = fit_lognormal(row.response, n, o.default_sigma);
  const FittedBatch response = draw_fitted(row.response, rfit, latents, 1);
  mean_reached = response.mean_reached;

  std::vector<int64_t> turns(n, 1);
  parse::Value record = parse::Value::make_object();
  record.set("step", parse::Value::make_number(row.step));
  record.set("response", fit_json(rfit));
  if (row.prompt) record.set("prompt", fit_json(pfit));
  if (row.turns) {
    std::vector<double> tl(n);
    const double c = kTurnsLengthCorr;
    for (size_t i = 0; i < n; ++i) tl[i] = c * latents[i] + std::sqrt(1 - c * c) * rng.normal();
    Moments tm = *row.turns;
    if (!tm.min) tm.min = 1;
    const LognormalFit tfit = fit_lognormal(tm, n, kTurnsSigma);
    turns = draw_fitted(tm, tfit, tl, 1).values;
    record.set("turns", fit_json(tfit));
  }
  std::vector<Turn> built;
  for (size_t i = 0; i < n; ++i) {
    const size_t p = i / static_cast<size_t>(o.group_size);
    TurnTotals totals{prompt.values[p], response.values[i], static_cast<int>(turns[i]),
                      std::numeric_limits<int64_t>::max()};
    builder.build(rng, totals, built);
    for (Turn& t : built)
      if (t.tool != kNoTool) t.tool = trace.intern_tool(o.shape.tools[static_cast<size_t>(t.tool)].name);
    TrajectoryInfo info;
    info.step = row.step;
    info.prompt_id = static_cast<int64_t>(p);
    info.sample = static_cast<int32_t>(i % static_cast<size_t>(o.group_size));
    info.truncated = response.at_max[i] != 0;
    trace.add(info, built);
  }
  return record;
}

parse::Value provenance(const std::string& file, const CsvTable& table, const std::array<int, kRoleCount>& index,
                       const SummaryImportOptions& o) {
  parse::Value prov = parse::Value::make_object();
  prov.set("importer", parse::Value::make_string("arlsim trace import"));
  prov.set("format", parse::Value::make_string("summary-csv"));
  prov.set("source", parse::Value::make_string(file));
  parse::Value columns = parse::Value::make_object();
  for (size_t r = 0; r < kRoleCount; ++r)
    if (index[r] >= 0)
      columns.set(std::string(summary_roles()[r].name),
                  parse::Value::make_string(table.columns[static_cast<size_t>(index[r])]));
  prov.set("columns", std::move(columns));
  prov.set("prompts_per_step", parse::Value::make_number(o.prompts_per_step));
  prov.set("group_size", parse::Value::make_number(o.group_size));
  prov.set("seed", parse::Value::make_number(static_cast<double>(o.seed)));
  prov.set("group_correlation", parse::Value::make_number(o.group_correlation));
  return prov;
}

// Reads and checks every row, sorted by step; false when any was wrong (all are reported).
bool read_rows(const CsvTable& table, const std::array<int, kRoleCount>& index, const std::string& file,
               const SummaryImportOptions& o, std::vector<StepRow>& rows, parse::Diagnostics& diag) {
  bool ok = true;
  std::vector<uint32_t> skipped;
  for (const CsvRow& row : table.rows) {
    std::optional<double> mean;
    if (!cell_number(row, index[kRespMean], table.columns[static_cast<size_t>(index[kRespMean])], file, mean, diag)) {
      ok = false;
    } else if (!mean) {
      skipped.push_back(row.line);  // a metric logged at other steps leaves gaps
    } else if (StepRow r; read_row(row, table, index, file, r, diag)) {
      rows.push_back(r);
    } else {
      ok = false;
    }
  }
  if (!skipped.empty())
    diag.add({parse::Severity::warning, file, {skipped.front(), 0}, "",
              std::to_string(skipped.size()) + " row(s) without a response length were skipped", ""});
  std::stable_sort(rows.begin(), rows.end(), [](const StepRow& a, const StepRow& b) { return a.step < b.step; });
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].step != rows[i - 1].step) continue;
    error(diag, file, rows[i].line, "step " + std::to_string(rows[i].step) + " appears twice (also on line " +
                                        std::to_string(rows[i - 1].line) + ")");
    ok = false;
  }
  if (ok && rows.empty()) error(diag, file, 0, "no rows with a step and a response length");
  const double total = static_cast<double>(rows.size()) * o.prompts_per_step * o.group_size;
  if (ok && total > kMaxTrajectories) {
    error(diag, file, 0, std::to_string(static_cast<int64_t>(total)) + " trajectories (steps x prompts x group) " +
                             "are more than this importer holds; use fewer prompts per step");
    ok = false;
  }
  return ok && !rows.empty();
}

}  // namespace

const std::vector<SummaryRole>& summary_roles() {
  static const std::vector<SummaryRole> roles{
      {"step", "training step", {"step", "_step", "global_step", "training/global_step", "trainer/global_step",
                                 "rollout_id", "iteration"}},
      {"response_mean", "mean response tokens", {"response_length/mean", "response_len/mean", "response_length_mean",
                                                 "mean_response_length"}},
      {"response_max", "longest response", {"response_length/max", "response_len/max", "response_length_max",
                                            "max_response_length"}},
      {"response_min", "shortest response", {"response_length/min", "response_len/min", "response_length_min",
                                             "min_response_length"}},
      {"response_std", "standard deviation of response tokens", {"response_length/std", "response_len/std",
                                                                 "response_length_std"}},
      {"response_clip_ratio", "share of responses at the limit", {"response_length/clip_ratio",
                                                                  "response_len/clip_ratio"}},
      {"prompt_mean", "mean prompt tokens", {"prompt_length/mean", "prompt_len/mean", "prompt_length_mean"}},
      {"prompt_max", "longest prompt", {"prompt_length/max", "prompt_len/max", "prompt_length_max"}},
      {"prompt_min", "shortest prompt", {"prompt_length/min", "prompt_len/min", "prompt_length_min"}},
      {"turns_mean", "mean turns per trajectory", {"num_turns/mean", "turns/mean", "num_turns_mean"}},
      {"turns_max", "most turns", {"num_turns/max", "turns/max", "num_turns_max"}},
      {"turns_min", "fewest turns", {"num_turns/min", "turns/min", "num_turns_min"}},
  };
  return roles;
}

std::optional<Trace> import_summary_csv(std::string_view text, const std::string& file,
                                        const SummaryImportOptions& o, parse::Diagnostics& diag) {
  CsvTable table;
  std::array<int, kRoleCount> index{};
  // Rows with the wrong number of cells are reported and left out; the others are still checked.
  const bool csv_ok = parse_csv(text, file, table, diag);
  if (table.columns.empty() || !map_columns(table, o, file, index, diag)) return std::nullopt;
  std::vector<StepRow> rows;
  if (!read_rows(table, index, file, o, rows, diag) || !csv_ok) return std::nullopt;

  Trace trace;
  trace.reserve(rows.size() * static_cast<size_t>(o.prompts_per_step) * static_cast<size_t>(o.group_size), 0);
  Rng rng(o.seed);
  TurnBuilder builder(o.shape);
  parse::Value fits = parse::Value::make_array();
  for (const StepRow& row : rows) {
    bool reached = true;
    fits.push_back(expand_step(row, o, rng, builder, trace, reached));
    if (!reached)
      diag.add({parse::Severity::warning, file, {row.line, 0}, "",
                "step " + std::to_string(row.step) + ": the min/max bounds do not allow the mean response length " +
                    std::to_string(std::llround(row.response.mean)) + "; the expanded mean differs",
                ""});
  }
  parse::Value fit = parse::Value::make_object();
  fit.set("method", parse::Value::make_string(
                        "log-normal per step; sigma from the std, else from the max as the expected largest of "
                        "n draws, else from the min, else the default; batch pinned to min/max (clip ratio at the "
                        "max) and rescaled to the mean"));
  fit.set("default_sigma", parse::Value::make_number(o.default_sigma));
  fit.set("steps", std::move(fits));
  parse::Value prov = provenance(file, table, index, o);
  prov.set("fit", std::move(fit));
  trace.header.provenance_json = to_json(prov);
  trace.header.description = "imported from " + file;
  return trace;
}

}  // namespace arlsim::trace
