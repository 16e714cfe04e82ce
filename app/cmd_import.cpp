// `arlsim import FILE|- --from verl --model M [--cluster C] --out SCENARIO.json`: a framework's
// launch read back into a scenario.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "app/commands.h"
#include "app/options.h"
#include "calib/harness/harness.h"
#include "planner/export/import.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;

int run_import_launch(const Args& args) {
  std::string file, from, model, cluster = "dgx-h100", out;
  po::options_description opts(
      "arlsim import FILE|- --from verl|openrlhf|slime|areal --model MODEL [--cluster CLUSTER] --out SCENARIO.json\n\n"
      "Reads a framework's launch (a shell script or command line; `-` reads stdin) and writes an arlsim\n"
      "scenario with its layouts, batch and engine settings, so that `arlsim simulate` can say what it\n"
      "costs and where it runs out of memory. The launch names a checkpoint, not a model arlsim knows:\n"
      "--model gives it (a preset or a file). Keys arlsim does not model are listed on stderr; keys it\n"
      "cannot parse are errors. A trace generated at the launch's length limits stands in for the\n"
      "workload's. docs/export.md lists the keys.\n\nOptions");
  opts.add_options()("help,h", "this text")("from", po::value(&from), "verl, openrlhf, slime or areal")(
      "model", po::value(&model), "the model (an arlsim preset name or a file)")(
      "cluster", po::value(&cluster), "the cluster preset or file the launch's GPUs are (default dgx-h100)")(
      "out", po::value(&out), "the scenario to write");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"file", 1, po::value(&file)}, vm); status >= 0) return status;
  if (file.empty() || from.empty() || model.empty() || out.empty()) {
    std::cerr << "arlsim import: a launch file, --from, --model and --out are required\n" << opts;
    return kExitBadInput;
  }
  planner::ImportRequest r;
  if (from == "verl") {
    r.from = planner::ImportSource::verl;
  } else if (from == "openrlhf") {
    r.from = planner::ImportSource::openrlhf;
  } else if (from == "slime") {
    r.from = planner::ImportSource::slime;
  } else if (from == "areal") {
    r.from = planner::ImportSource::areal;
  } else {
    std::cerr << "arlsim import: --from: unknown framework \"" << from << "\"; valid: verl, openrlhf, slime, areal\n";
    return kExitBadInput;
  }
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
    r.file = "<stdin>";
  } else {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "arlsim import: " << file << ": cannot be read\n";
      return kExitBadInput;
    }
    text << in.rdbuf();
    r.file = file;
  }
  r.text = text.str();
  r.model = model;
  r.cluster = cluster;
  const auto result = planner::import_launch(r);
  for (const auto& u : result.unmodelled) std::cerr << "not modelled: " << u << "\n";
  for (const auto& u : result.notes) std::cerr << "note: " << u << "\n";
  for (const auto& e : result.errors) std::cerr << e << "\n";
  if (!result.errors.empty()) return kExitBadInput;
  std::string diagnostics;
  const auto check = [&](const std::string& written) {
    input::Diagnostics diag;
    if (input::check_document(written, input::SpecKind::scenario, {}, diag)) return std::string();
    // Each problem at the launch's words that set the field (or the fields inside it); a field
    // the launch did not set (a default the import chose) by its place in the scenario unwritten.
    const auto lowercase = [](std::string s) {
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (const auto& d : diag.items()) {
      // A problem of a whole object (a layout's GPU count) is blamed on the fields inside it that
      // its message names (tp, dp, ...), all of them where it names none. One word may set several
      // fields, as an AReaL backend string sets a whole layout: each word once.
      const std::string message = lowercase(d.message);
      const auto named_in_message = [&](const std::string& pointer) {
        const std::string leaf = lowercase(pointer.substr(pointer.rfind('/') + 1));
        for (size_t at = message.find(leaf); at != std::string::npos; at = message.find(leaf, at + 1))
          if ((at == 0 || !word(message[at - 1])) && (at + leaf.size() >= message.size() || !word(message[at + leaf.size()])))
            return true;
        return false;
      };
      std::vector<std::pair<std::string, std::string>> inside;
      for (const auto& [pointer, origin] : result.origin)
        if (pointer == d.pointer || (!d.pointer.empty() && pointer.rfind(d.pointer + "/", 0) == 0))
          inside.emplace_back(pointer, origin);
      if (std::any_of(inside.begin(), inside.end(), [&](const auto& po) { return po.first != d.pointer && named_in_message(po.first); }))
        std::erase_if(inside, [&](const auto& po) { return po.first != d.pointer && !named_in_message(po.first); });
      std::string origins;
      std::set<std::string> named;
      for (const auto& [pointer, origin] : inside)
        if (named.insert(origin).second) origins += (origins.empty() ? "" : " and ") + origin;
      parse::Diagnostic shown = d;
      shown.file.clear();
      diagnostics += (origins.empty() ? "in the scenario " + out + " would hold: " : origins + ": ") +
                     parse::format_diagnostic(shown) + "\n";
    }
    if (!diagnostics.empty()) diagnostics.pop_back();
    return "the launch makes no valid scenario, so " + out + " was not written";
  };
  if (const std::string problem = calib::write_atomically(out, result.scenario, check); !problem.empty()) {
    std::cerr << "arlsim import: " << problem << (diagnostics.empty() ? "" : ":\n" + diagnostics) << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace arlsim::app
