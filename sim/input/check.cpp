#include "sim/input/check.h"

#include <filesystem>

namespace arlsim::input {
namespace {

template <typename Spec, typename Parse>
std::optional<AnySpec> parse_as(const Value& doc, Diagnostics& diag, Parse&& parse) {
  Spec spec;
  if (!parse(doc, diag, spec)) return std::nullopt;
  return AnySpec(std::move(spec));
}

}  // namespace

std::optional<AnySpec> parse_document(const Value& doc, SpecKind kind, Diagnostics& diag) {
  switch (kind) {
    case SpecKind::model:
      return parse_as<ModelSpec>(doc, diag, [](const Value& v, Diagnostics& d, ModelSpec& s) { return parse_model(v, "", d, s); });
    case SpecKind::gpu:
      return parse_as<GpuProfile>(doc, diag,
                                  [](const Value& v, Diagnostics& d, GpuProfile& s) { return parse_gpu_profile(v, "", d, s); });
    case SpecKind::cluster:
      return parse_as<ClusterSpec>(doc, diag,
                                   [](const Value& v, Diagnostics& d, ClusterSpec& s) { return parse_cluster(v, "", d, s); });
    case SpecKind::workload:
      return parse_as<WorkloadSpec>(doc, diag,
                                    [](const Value& v, Diagnostics& d, WorkloadSpec& s) { return parse_workload(v, "", d, s); });
    case SpecKind::policy:
      return parse_as<PolicySpec>(doc, diag,
                                  [](const Value& v, Diagnostics& d, PolicySpec& s) { return parse_policy(v, "", d, s); });
    case SpecKind::scenario:
      return parse_as<ScenarioSpec>(doc, diag, [](const Value& v, Diagnostics& d, ScenarioSpec& s) { return parse_scenario(v, d, s); });
    case SpecKind::stage:
      return parse_as<StageSpec>(doc, diag, [](const Value& v, Diagnostics& d, StageSpec& s) { return parse_stage(v, d, s); });
  }
  return std::nullopt;
}

std::optional<CheckedDocument> check_document(std::string_view path_or_name, std::optional<SpecKind> kind,
                                              const std::vector<std::string>& overrides, Diagnostics& diag) {
  const size_t errors_before = diag.error_count();
  Loader loader(diag);
  SpecKind detected = SpecKind::scenario;
  std::optional<Value> doc = loader.load(path_or_name, kind, &detected);
  if (!doc) return std::nullopt;
  if (!overrides.empty()) {
    for (const auto& o : overrides) apply_override(*doc, o, diag);
    loader.resolve(*doc, detected, "");  // an override may name another preset or file
  }
  const size_t items_before = diag.items().size();
  std::optional<AnySpec> spec = parse_document(*doc, detected, diag);
  if (!overrides.empty()) {
    // A problem the overrides made in a preset's fields is reported where the preset has them;
    // the user changes them with --set, not in the preset.
    std::string given;
    for (const auto& o : overrides) given += (given.empty() ? "--set " : ", --set ") + o;
    diag.note_on_presets(items_before, "the preset as changed by " + given + "; change the field named with --set");
  } else if (std::error_code ec; std::filesystem::is_regular_file(std::string(path_or_name), ec)) {
    // So is one that a file extending the preset made: it is changed in that file.
    diag.note_on_presets(items_before, "the preset as " + std::string(path_or_name) + " uses it; set the field there");
  }
  if (!spec || diag.error_count() != errors_before) return std::nullopt;
  if (const auto* gpu = std::get_if<GpuProfile>(&*spec); gpu && !gpu->system.empty()) {
    // The system a profile names must be a cluster (capacity builds this GPU's nodes from it).
    const Value* named = doc->find("system");
    Value system = *named;
    loader.resolve(system, SpecKind::cluster, "/system");
    if (diag.error_count() != errors_before) return std::nullopt;
    const std::optional<AnySpec> cluster = parse_document(system, SpecKind::cluster, diag);
    if (!cluster || diag.error_count() != errors_before) return std::nullopt;
    if (const auto& c = std::get<ClusterSpec>(*cluster); c.gpu.name != gpu->name)
      diag.warning(*named, "/system", "the system " + quote(gpu->system) + " is a cluster of " + c.gpu.name + ", not of " +
                                          gpu->name + ": capacity takes its nodes' shape with this GPU in them");
  }
  return CheckedDocument{detected, std::move(*spec), std::move(*doc)};
}

std::optional<ScenarioSpec> load_scenario(std::string_view path_or_name, const std::vector<std::string>& overrides,
                                          Diagnostics& diag, Value* document) {
  auto checked = check_document(path_or_name, SpecKind::scenario, overrides, diag);
  if (!checked) return std::nullopt;
  if (document) *document = std::move(checked->document);
  return std::get<ScenarioSpec>(std::move(checked->spec));
}

}  // namespace arlsim::input
