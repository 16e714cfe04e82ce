// `arlsim list models|gpus|clusters|scenarios|workloads|policies|stages`: presets, registered
// policies and the step's stages with one-line descriptions.
#include <iostream>

#include "app/commands.h"
#include "sim/report/text.h"
#include "app/summaries.h"
#include "planner/dispatch_plan.h"
#include "planner/selector.h"
#include "sim/graph/stage.h"
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
    auto section = [](const char* title, const auto& registry) {
      std::cout << title << "\n";
      for (const auto& c : registry.choices()) {
        std::string name(c.name);
        name.resize(16, ' ');
        std::cout << "  " << name << c.description << "\n";
      }
    };
    section("routing (policy/routing)", input::routing_policies());
    section("tool scheduling (policy/tool_policy)", input::tool_policies());
    section("dispatch (policy/dispatch)", input::dispatch_modes());
    section("parallelism selectors (arlsim plan --selector)", planner::selectors());
    section("batch assignment (policy/balance_batch)", input::batch_assignments());
    section("dispatch plans (arlsim plan)", planner::dispatch_plans());
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
        if (doc->kind == input::SpecKind::gpu) {
          const double price = std::get<input::GpuProfile>(doc->spec).price_usd_per_gpu_hour;
          text += price > 0 ? "; $" + report::format_fixed(price, 2) + " per GPU-hour"
                            : "; unpriced (give --price GPU=USD to capacity, or price_usd_per_gpu_hour)";
        }
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
