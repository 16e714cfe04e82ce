#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "sim/input/check.h"
#include "sim/input/loader.h"
#include "tests/parse/test_util.h"

using namespace arlsim::input;
namespace fs = std::filesystem;

namespace {

// A scratch directory of JSON files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("arlsim_loader_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

}  // namespace

TEST_CASE("loader: presets are embedded and found by kind and name") {
  Diagnostics diag;
  auto doc = check_document("h100-sxm", SpecKind::gpu, {}, diag);
  REQUIRE(doc);
  CHECK(std::get<GpuProfile>(doc->spec).peak(Dtype::bf16) == 989e12);
  CHECK(std::get<GpuProfile>(doc->spec).memory_bandwidth_bytes_per_s == 3.35e12);
}

TEST_CASE("loader: a cluster extends a preset and overrides fields") {
  TempDir dir;
  const auto path = dir.write("c.json", R"({"extends": "dgx-h100", "nodes": 4, "gpu": "h200-sxm"})");
  Diagnostics diag;
  auto doc = check_document(path, std::nullopt, {}, diag);
  INFO(format_all(diag));
  REQUIRE(doc);
  CHECK(doc->kind == SpecKind::cluster);
  const auto& c = std::get<ClusterSpec>(doc->spec);
  CHECK(c.nodes == 4);
  CHECK(c.total_gpus() == 32);
  CHECK(c.gpu.name == "h200-sxm");
  CHECK(c.nic_bandwidth_bytes_per_s == 50e9);  // 400 Gbps from the profile
}

TEST_CASE("loader: a file next to the referencing file wins over a preset of the same name") {
  TempDir dir;
  dir.write("h100-sxm", R"({"format": "arlsim-gpu/1", "name": "local", "provenance": {"kind": "measured", "source": "test"},
                            "peak": {"bf16": "100 TFLOP/s"}, "memory": {"capacity": "10 GiB", "bandwidth": "1 TB/s"},
                            "host_link": {"bandwidth": "10 GB/s"}})");
  const auto path = dir.write("c.json", R"({"gpu": "h100-sxm", "gpus_per_node": 8})");
  Diagnostics diag;
  auto doc = check_document(path, SpecKind::cluster, {}, diag);
  INFO(format_all(diag));
  REQUIRE(doc);
  CHECK(std::get<ClusterSpec>(doc->spec).gpu.name == "local");
}

TEST_CASE("loader: reference cycles are reported with their chain") {
  TempDir dir;
  dir.write("a.json", R"({"extends": "b.json", "gpus_per_node": 8})");
  dir.write("b.json", R"({"extends": "a.json"})");
  Diagnostics diag;
  auto doc = check_document(dir.path("a.json"), SpecKind::cluster, {}, diag);
  CHECK_FALSE(doc);
  REQUIRE(diag.has_errors());
  const std::string first = format_diagnostic(diag.items().front());
  CHECK(first == dir.path("b.json") + ":1:13: /extends: reference cycle: " + dir.path("a.json") + " -> " +
                     dir.path("b.json") + " -> " + dir.path("a.json"));
}

TEST_CASE("loader: merge patch follows RFC 7386") {
  Diagnostics diag;
  auto target = arlsim::test::parse(R"({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]})", diag);
  auto patch = arlsim::test::parse(R"({"a": null, "b": {"c": 5}, "e": [2, 3], "f": "x"})", diag);
  merge_patch(target, patch);
  CHECK(target.find("a") == nullptr);
  CHECK(target.find("b")->find("c")->as_int64() == 5);
  CHECK(target.find("b")->find("d")->as_int64() == 3);
  CHECK(target.find("e")->items().size() == 2);
  CHECK(target.find("f")->as_string() == "x");
}

TEST_CASE("loader: --set overrides fields by JSON pointer") {
  Diagnostics diag;
  auto doc = check_document("default", SpecKind::scenario, {"/cluster/nodes=4", "/policy/train/dp=16", "/model=qwen3-4b"}, diag);
  INFO(format_all(diag));
  REQUIRE(doc);
  const auto& s = std::get<ScenarioSpec>(doc->spec);
  CHECK(s.cluster.total_gpus() == 32);
  CHECK(s.policy.train.dp == 16);
  CHECK(s.model.name == "qwen3-4b");
}

TEST_CASE("loader: --set problems name the assignment") {
  Diagnostics diag;
  auto root = arlsim::test::parse(R"({"a": {"b": 1}})", diag);
  CHECK_FALSE(apply_override(root, "/x/y=1", diag));
  CHECK_FALSE(apply_override(root, "no-equals", diag));
  CHECK(apply_override(root, "a/c=\"text\"", diag));
  CHECK(root.find("a")->find("c")->as_string() == "text");
  CHECK(apply_override(root, "/a/d=plain words", diag));
  CHECK(root.find("a")->find("d")->as_string() == "plain words");
  CHECK(format_all(diag) == "--set /x/y=1: /x does not exist in the document\n"
                            "--set no-equals: expected /json/pointer=value\n");
}

TEST_CASE("loader: a set value that breaks the schema is reported at the --set") {
  Diagnostics diag;
  auto doc = check_document("default", SpecKind::scenario, {"/policy/train/tp=three"}, diag);
  CHECK_FALSE(doc);
  CHECK(format_all(diag) == "--set /policy/train/tp=three: /policy/train/tp: expected an integer, got the string \"three\"\n");
}

TEST_CASE("loader: kinds are detected from format or keys") {
  Diagnostics diag;
  auto detect = [&](const std::string& text) { return detect_kind(arlsim::test::parse(text, diag), diag); };
  CHECK(detect(R"({"format": "arlsim-policy/1"})") == SpecKind::policy);
  CHECK(detect(R"({"model_type": "llama"})") == SpecKind::model);
  CHECK(detect(R"({"gpus_per_node": 8})") == SpecKind::cluster);
  CHECK(detect(R"({"prompts_per_step": 8})") == SpecKind::workload);
  CHECK(diag.empty());
  CHECK_FALSE(detect(R"({"format": "arlsim-clustre/1"})"));
  CHECK(format_all(diag) == "mem.json:1:12: /format: unknown format \"arlsim-clustre/1\"; did you mean \"arlsim-cluster/1\"?\n");
}
