// Framework launches back in as scenarios: a verl, OpenRLHF or slime launch script (or command
// line), or an AReaL YAML configuration, read into an arlsim scenario, so that a user can ask what their run costs and where it will
// run out of memory. Keys arlsim does not model are listed, not silently ignored; a key it cannot
// parse is an error naming the file, the line and the key. export_plan's output reads back into
// the same layouts and batch settings.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace arlsim::planner {

enum class ImportSource { verl, openrlhf, slime, areal };

struct ImportRequest {
  ImportSource from = ImportSource::verl;
  std::string file;     // for messages
  std::string text;     // the launch script or command line
  std::string model;    // arlsim model preset or file (the launch names a checkpoint path)
  std::string cluster;  // arlsim cluster preset or file whose GPUs the launch runs on
};

struct ImportResult {
  std::string scenario;                // arlsim-scenario/1 JSON
  std::vector<std::string> unmodelled;  // "FILE:LINE: key: why"
  std::vector<std::string> notes;       // "FILE:LINE: key: how arlsim takes it"
  std::vector<std::string> errors;      // "FILE:LINE: key: problem"
  // Per field of the scenario (a JSON pointer), the launch's word that set it: "FILE:LINE: key=value".
  std::map<std::string, std::string> origin;
};

ImportResult import_launch(const ImportRequest& r);

}  // namespace arlsim::planner
