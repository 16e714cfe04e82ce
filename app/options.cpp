#include "app/options.h"

#include <boost/program_options/parsers.hpp>
#include <iostream>

namespace arlsim::app {
namespace po = boost::program_options;

int parse_options(const Args& args, const po::options_description& visible, const po::options_description& hidden,
                  const po::positional_options_description& positional, po::variables_map& vm) {
  po::options_description all;
  all.add(visible).add(hidden);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "arlsim: " << e.what() << "\n\n" << visible;
    return kExitBadInput;
  }
  return -1;
}

}  // namespace arlsim::app
