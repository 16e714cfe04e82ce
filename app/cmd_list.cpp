// `arlsim list models|gpus|clusters|scenarios|workloads|policies|stages`: presets, registered
// policies and the step's stages with one-line descriptions.
#include <iostream>

#include "app/commands.h"
#include "app/summaries.h"
#include "planner/selector.h"
#include "sim/graph/stage.h"
#include "sim/rl/routing.h"
#include "sim/input/presets.h"

namespace arlsim::app {

int run_list(const Args& args) {
  static const std::pair<std::string_view, std::string_view> kTopics[] = {
      {"models", "model"},       {"gpus", "gpu"},          {"clusters", "cluster"},
      {"scenarios", "scenario"}, {"workloads", "workload"}, {"policies", "policy"}};
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    std::ostream& out = args.size() == 1 ? std::cout : std::cerr;
    out << "usage: arlsim list TOPIC\n\nTopics: models, gpus, clusters, scenarios, workloads, policies, stages\n";
    return args.size() == 1 ? kExitOk : kExitBadInput;
  }
  if (args[0] == "stages") {
    // The stage table: names as summary.json, steps.csv and the timeline spell them.
    for (const auto& s : graph::kStages) {
      std::string name(s.name);
      name.resize(14, ' ');
      std::string side(s.side == graph::Side::rollout ? "rollout" : "training");
      side.resize(10, ' ');
      std::cout << "  " << name << side << s.description << "\n";
    }
    return kExitOk;
  }
  if (args[0] == "policies") {
    // Registered policies, then any preset policy files.
    auto section = [](const char* title, const std::vector<rl::RoutingInfo>& infos) {
      std::cout << title << "\n";
      for (const auto& i : infos) {
        std::string name(i.name);
        name.resize(16, ' ');
        std::cout << "  " << name << i.description << "\n";
      }
    };
    section("routing (policy/routing)", rl::routing_policies());
    section("tool scheduling (policy/tool_policy)", rl::tool_policies());
    section("dispatch (policy/dispatch)", rl::dispatch_modes());
    std::vector<rl::RoutingInfo> selectors;
    for (const auto& sel : planner::selectors()) selectors.push_back({sel.name, sel.description});
    section("parallelism selectors (arlsim plan --selector)", selectors);
    section("batch assignment (policy/balance_batch)",
            {{"true", "tokens balanced over the training ranks longest first, as verl's balance_batch"},
             {"false", "contiguous chunks in order"},
             {"layout-aware", "longest first to the least-loaded rank of the producer's node while it stays within 2% "
                              "above the mean, else to the least-loaded rank (EARL)"}});
    section("dispatch plans (arlsim plan)",
            {{"layout-aware", "the layout-aware assignment above, dispatched directly"},
             {"balanced", "tokens balanced over ranks longest first (LPT), wherever the sample is"},
             {"round-robin", "sample i to rank i mod dp"},
             {"centralized", "balanced ranks, every tensor through the single controller"}});
  }
  for (const auto& [topic, kind] : kTopics) {
    if (args[0] != topic) continue;
    size_t width = 0;
    for (auto name : input::preset_names(kind)) width = std::max(width, name.size());
    if (input::preset_names(kind).empty() && topic != "policies")
      std::cout << "no " << kind << " presets are shipped: scenarios define theirs inline (see scenarios/*.json)\n";
    for (auto name : input::preset_names(kind)) {
      auto doc = check_preset(kind, name);
      std::string text;
      if (!doc) {
        text = "(invalid preset; see the diagnostics above)";
      } else if (doc->kind == input::SpecKind::model) {
        text = describe_model(std::get<input::ModelSpec>(doc->spec));
      } else {
        std::visit([&](const auto& s) { text = s.description; }, doc->spec);
        if (text.empty()) text = describe(*doc);
      }
      std::string padded(name);
      padded.resize(width + 2, ' ');
      std::cout << padded << text << "\n";
    }
    if (topic == "models") std::cout << "\nDerived figures (GFLOP/token: forward pass of one token at a 4096-token context)\n"
                                     << model_table(4096);
    return kExitOk;
  }
  std::cerr << "arlsim list: unknown topic '" << args[0]
            << "'; expected models, gpus, clusters, scenarios, workloads, policies or stages\n";
  return kExitBadInput;
}

}  // namespace arlsim::app
