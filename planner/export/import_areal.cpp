#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <yaml-cpp/yaml.h>

#include "planner/export/import_launch.h"

namespace arlsim::planner::import_detail {

bool areal(const ImportRequest& r, ImportResult& out, Launch& l) {
  YAML::Node root;
  try {
    root = YAML::Load(r.text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp stops a document nested past its depth limit with "bad file".
    const std::string why = e.msg == "bad file" ? "nested too deeply to read" : e.msg;
    out.errors.push_back(r.file + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + why);
    return false;
  }
  if (!root.IsMap()) {
    out.errors.push_back(r.file + ": expected AReaL's configuration, a YAML mapping");
    return false;
  }
  auto where = [&](const YAML::Node& n) { return r.file + ":" + std::to_string(n.Mark().line + 1) + ": "; };
  // A value as an error quotes it: a scalar's text, else what it is.
  auto quoted = [](const YAML::Node& n) -> std::string {
    if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
    return n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : "nothing";
  };
  auto integer_at = [&](const YAML::Node& n, const std::string& key, int64_t& into) {
    try {
      into = n.as<int64_t>();
      return true;
    } catch (const YAML::Exception&) {
      out.errors.push_back(where(n) + key + ": expected a whole number, got " + quoted(n));
      return false;
    }
  };
  // A count: a whole number of at least 1.
  auto count_at = [&](const YAML::Node& n, const std::string& key, int64_t& into) {
    if (!integer_at(n, key, into)) return false;
    if (into >= 1) return true;
    out.errors.push_back(where(n) + key + ": expected a whole number of at least 1, got " + std::to_string(into));
    return false;
  };
  // "engine:d4p1t2c1e1": the dimensions of a backend string.
  auto backend = [&](const YAML::Node& n, const std::string& key, std::string& engine, std::map<char, int64_t>& dims) {
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    static const std::regex form("([a-z_]+):((?:[dptce][0-9]+)+)");
    std::smatch m;
    if (!std::regex_match(text, m, form)) {
      out.errors.push_back(where(n) + key + ": expected a backend string such as \"megatron:d2p2t2c1e4\", got " + quoted(n));
      return false;
    }
    engine = m[1];
    static const std::regex dim("([dptce])([0-9]+)");
    const std::string spec = m[2];
    for (std::sregex_iterator it(spec.begin(), spec.end(), dim), end; it != end; ++it) {
      const auto value = integer((*it)[2]);
      if (!value || *value < 1) {
        out.errors.push_back(where(n) + key + ": dimension " + (*it)[1].str() + " must be a whole number of at least 1, got " +
                             (*it)[2].str());
        return false;
      }
      dims[(*it)[1].str()[0]] = *value;
    }
    return true;
  };
  std::set<std::string> read;  // dotted keys read (a key twice is refused, as OmegaConf refuses it)
  // YAML's aliases make a graph of the document: one that refers to itself would be walked
  // forever, and nested ones ("billion laughs") exponentially. AReaL's configurations are a few
  // levels of a few hundred keys, so the walk stops well above that.
  constexpr int kMaxDepth = 32;
  constexpr int64_t kMaxEntries = 20000;
  int64_t entries = 0;
  std::function<void(const YAML::Node&, const std::string&, int)> walk = [&](const YAML::Node& n, const std::string& prefix,
                                                                           int depth) {
    if (depth > kMaxDepth)
      throw YAML::Exception(n.Mark(), "nested deeper than " + std::to_string(kMaxDepth) +
                                          " levels (an alias that refers to itself?)");
    for (const auto& kv : n) {
      if (++entries > kMaxEntries)
        throw YAML::Exception(kv.first.Mark(), "more than " + std::to_string(kMaxEntries) +
                                                   " entries with its aliases expanded (aliases nested into one another?)");
      const std::string key = prefix + kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (!read.insert(key).second) {
        out.errors.push_back(where(kv.first) + key + ": given twice (OmegaConf refuses a configuration with a key twice)");
        continue;
      }
      // A mapping is a section, walked, unless its key is one the chain reads as a value (then the
      // chain's reader says what it expected). The field each value sets comes from its line
      // ("FILE:LINE: key: value"), for the errors of a scenario the configuration cannot make.
      std::optional<Origins> origin;
      if (!v.IsMap()) origin.emplace(l, where(v) + key + ": " + (v.IsScalar() ? v.Scalar() : quoted(v)));
      // The chain's names, gathered as it compares them: a key that matches none is checked
      // against them for a slip ("did you mean").
      std::vector<std::string> names;
      const auto is = [&](const char* name) {
        names.push_back(name);
        return key == name;
      };
      int64_t x = 0;
      if (is("cluster.n_nodes")) { if (count_at(v, key, x)) l.nodes = x; }
      else if (is("cluster.n_gpus_per_node")) { if (count_at(v, key, x)) l.gpus_per_node = x; }
      else if (is("rollout.backend")) {
        std::string engine;
        std::map<char, int64_t> d;
        if (backend(v, key, engine, d)) {
          if (engine != "sglang" && engine != "vllm") out.unmodelled.push_back(where(v) + key + ": engine \"" + engine + "\"");
          l.rollout["replicas"] = d.count('d') ? d['d'] : 1;
          l.rollout["tp"] = d.count('t') ? d['t'] : 1;
          if (d.count('p') && d['p'] > 1) l.rollout["pp"] = d['p'];
          l.rollout_gpus_per_node = (d.count('d') ? d['d'] : 1) * (d.count('t') ? d['t'] : 1) * (d.count('p') ? d['p'] : 1);
          // The engines' GPUs are taken from the cluster's: what training is left (the training
          // layout's GPU count is checked against it) comes from this line too.
          l.origin["/policy/train/gpus"] = where(v) + key + ": " + v.Scalar();
        }
      } else if (is("actor.backend")) {
        std::string engine;
        std::map<char, int64_t> d;
        if (backend(v, key, engine, d)) {
          l.megatron = engine == "megatron";
          for (const auto& [c, name] : {std::pair{'d', "dp"}, {'p', "pp"}, {'t', "tp"}, {'c', "cp"}, {'e', "ep"}})
            if (d.count(c)) l.train[name] = d[c];
          l.train["zero"] = l.megatron ? 1 : 3;
        }
      } else if (is("rollout.max_head_offpolicyness")) {
        if (integer_at(v, key, x)) {
          if (x < 0) out.errors.push_back(where(v) + key + ": expected 0 or more, got " + std::to_string(x));
          else l.staleness = x;
        }
      }
      else if (is("actor.mb_spec.max_tokens_per_mb")) {
        if (count_at(v, key, x)) {
          l.train["max_tokens_per_gpu"] = x;
          l.train["packing"] = "fit";  // AReaL's micro-batches: first fit decreasing into bins of the budget (ffd_allocate)
        }
      }
      else if (is("actor.ppo_n_minibatches")) {
        if (integer_at(v, key, x)) {
          if (x < 1) out.errors.push_back(where(v) + key + ": must be at least 1, got " + std::to_string(x));
          else l.mini_batch_prompts = -x;  // prompts per mini-batch, resolved below
        }
      } else if (is("actor.gradient_checkpointing")) {
        try {
          l.train["recompute"] = v.as<bool>() ? "full" : "none";
        } catch (const YAML::Exception&) {
          out.errors.push_back(where(v) + key + ": expected true or false, got " + quoted(v));
        }
      }
      else if (is("train_dataset.batch_size")) { if (count_at(v, key, x)) l.prompts = x; }
      else if (is("gconfig.n_samples")) { if (count_at(v, key, x)) l.workload["samples_per_prompt"] = x; }
      else if (is("gconfig.max_new_tokens")) { if (count_at(v, key, x)) l.workload["max_response_tokens"] = x; }
      else if (is("gconfig.max_tokens")) { if (count_at(v, key, x)) l.workload["max_context_tokens"] = x; }
      else if (is("sglang.mem_fraction_static")) {
        double fraction = 0;
        bool parsed = false;
        try {
          fraction = v.as<double>();
          parsed = std::isfinite(fraction);
        } catch (const YAML::Exception&) {
        }
        if (parsed) l.engine["gpu_memory_utilization"] = fraction;
        else out.errors.push_back(where(v) + key + ": expected a finite number, got " + quoted(v));
      } else if (is("experiment_name")) l.name = v.as<std::string>("");
      else if (is("scheduler.type") || is("rollout.max_concurrent_rollouts") || is("trial_name") ||
               is("actor.path") || is("tokenizer_path") || is("train_dataset.path")) {}
      else if (v.IsMap()) {
        walk(v, key + ".", depth + 1);
      } else {
        const std::string closest = slip_of(key, names);
        out.unmodelled.push_back(where(v) + key + ": not modelled by arlsim" +
                                 (closest.empty() ? "" : "; did you mean " + closest + "?"));
      }
    }
  };
  try {
    walk(root, "", 0);
  } catch (const YAML::Exception& e) {
    out.unmodelled.clear();  // a walk cut short: what it listed is not the file's
    out.errors.push_back(r.file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!out.errors.empty()) return false;
  if (!l.rollout.count("replicas") || !l.train.count("dp")) {
    out.errors.push_back(r.file + ": rollout.backend and actor.backend are required (the engines and the actor's layout)");
    return false;
  }
  // AReaL's mini-batches: ppo_n_minibatches of the step's prompts.
  if (l.mini_batch_prompts < 0 && l.prompts > 0) l.mini_batch_prompts = l.prompts / -l.mini_batch_prompts;
  if (l.workload.count("max_context_tokens") && l.workload.count("max_response_tokens"))
    l.workload["max_prompt_tokens"] = std::max<int64_t>(1, l.workload.at("max_context_tokens").get<int64_t>() -
                                                               l.workload.at("max_response_tokens").get<int64_t>());
  if (!l.workload.count("algorithm")) l.workload["algorithm"] = "grpo";
  // The backends share the cluster, each with its own GPUs (the rollout pool is the engines').
  l.disaggregated = true;
  l.rollout_nodes = 0;
  l.async = l.staleness > 0;
  return true;
}

}  // namespace arlsim::planner::import_detail
