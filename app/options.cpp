#include "app/options.h"

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "calib/harness/harness.h"

namespace arlsim::app {
namespace po = boost::program_options;

int parse_options(const Args& args, const po::options_description& visible, std::optional<Positional> positional,
                  po::variables_map& vm, std::string_view help_extra, const po::options_description* help_options) {
  po::options_description all;
  all.add(visible);
  po::positional_options_description pos;
  if (positional) {
    all.add_options()(positional->name, positional->value);
    pos.add(positional->name, positional->max_count);
  }
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "arlsim: " << e.what() << "\n\n" << visible;
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << (help_options ? *help_options : visible) << help_extra;
    return kExitOk;
  }
  // An empty --out would quietly write nothing (or into the working folder): name one.
  if (vm.count("out") && !vm["out"].defaulted())
    if (const auto* text = boost::any_cast<std::string>(&vm["out"].value()); text && text->empty()) {
      std::cerr << "arlsim: --out is empty: name the folder or file to write\n";
      return kExitBadInput;
    }
  return -1;
}

std::string output_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  if (std::string problem = calib::output_path_problem(path); !problem.empty()) return problem;
  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(path, ec));  // a link to nothing yet stays
  {
    std::ofstream probe(path, std::ios::app | std::ios::binary);  // opened without truncating
    if (!probe) return "cannot write " + path;
  }
  if (!existed) fs::remove(path, ec);
  return "";
}

}  // namespace arlsim::app
