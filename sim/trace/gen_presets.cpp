// The generator presets: each mimics a published agentic-RL workload (REFERENCE.md, section 2).
// Figures named in `facts` are the published ones; the growth curves' exact shapes are
// illustrative, chosen to pass through those figures.
#include <algorithm>

#include "sim/trace/gen_options.h"

namespace arlsim::trace {
namespace {

const std::vector<GenPreset>& presets() {
  static const std::vector<GenPreset> list{
      {"dapo-math",
       "DAPO-like math run: 512 prompts x 16 samples, single turn, responses up to 20K growing over 200 steps",
       "DAPO recipe: 512 prompts x n=16, prompt <= 2,048, response <= 20,480 tokens; mean response grows and "
       "saturates over training (DeepSeek-R1-Zero-like); lengths correlated within a group, heavy tail",
       {{"steps", "200"},
        {"prompts-per-step", "512"},
        {"group-size", "16"},
        {"prompt-tokens", "256"},
        {"prompt-sigma", "0.5"},
        {"prompt-limit", "2048"},
        {"response-mean", "saturating 2K..9K tau=70"},
        {"response-limit", "20480"},
        {"length-sigma", "0.55"},
        {"tail-weight", "0.08"},
        {"tail-alpha", "2.2"},
        {"group-correlation", "0.6"}}},
      {"swe-agent",
       "SWE-agent run: up to 50 turns, contexts up to 64K, slow sandbox tools with cold starts",
       "DeepSWE-like recipe: n=8, prompt <= 4,096; SWE agents take 29-78 steps (median), RL recipes 50-100 "
       "environment steps; sandbox cold starts; trajectories last 1.5-388 s",
       {{"steps", "100"},
        {"prompts-per-step", "64"},
        {"group-size", "8"},
        {"prompt-tokens", "3000"},
        {"prompt-sigma", "0.2"},
        {"prompt-limit", "4096"},
        {"response-mean", "linear 12K..40K"},
        {"response-limit", "64K"},
        {"context-limit", "64K"},
        {"length-sigma", "0.5"},
        {"tail-weight", "0.05"},
        {"tail-alpha", "2.5"},
        {"turns-mean", "linear 15..32"},
        {"turns-min", "3"},
        {"turns-max", "50"},
        {"turns-sigma", "0.4"},
        {"turns-length-correlation", "0.7"},
        {"tool", "bash: dist=lognormal mean=3s sigma=1 cold_start=20s cold_start_prob=1 timeout=300s share=4 "
                 "obs_tokens=600"},
        {"tool", "edit: dist=lognormal mean=1s sigma=0.5 share=2 obs_tokens=200"},
        {"tool", "run_tests: dist=lognormal mean=40s sigma=0.8 timeout=600s share=1 obs_tokens=1500"},
        {"turn-prefill-tokens", "8"}}},
      {"search-agent",
       "search agent: 2 to 40 tool calls per trajectory, growing over training, long observations",
       "search agents reach more than 40 tool calls and over 150K tokens per trajectory; here contexts are "
       "capped at 128K",
       {{"steps", "100"},
        {"prompts-per-step", "128"},
        {"group-size", "8"},
        {"prompt-tokens", "300"},
        {"prompt-sigma", "0.4"},
        {"prompt-limit", "2048"},
        {"response-mean", "linear 6K..30K"},
        {"response-limit", "128K"},
        {"context-limit", "128K"},
        {"length-sigma", "0.6"},
        {"tail-weight", "0.06"},
        {"tail-alpha", "2.2"},
        {"turns-mean", "linear 4..16"},
        {"turns-min", "3"},
        {"turns-max", "41"},
        {"turns-sigma", "0.6"},
        {"turns-length-correlation", "0.8"},
        {"tool", "search: dist=lognormal mean=1.2s sigma=0.7 timeout=30s share=3 obs_tokens=700"},
        {"tool", "browse: dist=lognormal mean=3s sigma=0.9 cold_start=2s cold_start_prob=0.3 timeout=60s share=1 "
                 "obs_tokens=2500"},
        {"turn-prefill-tokens", "8"}}},
      {"code-tool",
       "code-interpreter run (ReTool-like): 8 to 16 turns with a Python sandbox, responses up to 16K",
       "ReTool: 8-16 turns, 120 s tool timeout; code-execution outputs are short",
       {{"steps", "150"},
        {"prompts-per-step", "128"},
        {"group-size", "16"},
        {"prompt-tokens", "400"},
        {"prompt-sigma", "0.4"},
        {"prompt-limit", "2048"},
        {"response-mean", "linear 3K..9K"},
        {"response-limit", "16K"},
        {"length-sigma", "0.5"},
        {"tail-weight", "0.05"},
        {"tail-alpha", "2.5"},
        {"turns-mean", "linear 9..13"},
        {"turns-min", "8"},
        {"turns-max", "16"},
        {"turns-sigma", "0.25"},
        {"tool", "python: dist=lognormal mean=0.6s sigma=0.9 cold_start=3s cold_start_prob=0.2 timeout=120s "
                 "obs_tokens=150"},
        {"turn-prefill-tokens", "8"}}},
      {"earl-game",
       "EARL-like game agent: contexts reach an 8K limit around step 13 and grow to 32K once it is lifted",
       "EARL: a game agent (about 3 turns per episode) hit its 8,192-token context limit at step 13 and "
       "collapsed after step 15; here the limit is lifted to 32K at step 16 and contexts keep growing",
       {{"steps", "60"},
        {"prompts-per-step", "64"},
        {"group-size", "8"},
        {"prompt-tokens", "400"},
        {"prompt-sigma", "0.2"},
        {"prompt-limit", "1024"},
        {"response-mean", "linear 1.5K..31K"},
        {"response-limit", "32K"},
        {"context-limit", "8K,32K@16"},
        {"length-sigma", "0.45"},
        {"tail-weight", "0.05"},
        {"tail-alpha", "2.5"},
        {"turns-mean", "linear 3..6"},
        {"turns-min", "2"},
        {"turns-max", "9"},
        {"turns-sigma", "0.3"},
        {"tool", "env: dist=lognormal mean=0.05s sigma=0.5 obs_tokens=120"}}},
  };
  return list;
}

}  // namespace

std::span<const GenPreset> gen_presets() { return presets(); }

const GenPreset* find_gen_preset(std::string_view name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> gen_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.emplace_back(p.name);
  return names;
}

}  // namespace arlsim::trace
