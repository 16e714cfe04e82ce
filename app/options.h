// Shared Boost.Program_options plumbing for the subcommands.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <boost/program_options/variables_map.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "app/commands.h"

namespace arlsim::app {

// A subcommand's positional arguments: up to `max_count` of them (-1: any number), stored
// through `value` (which the parser takes over) under `name`.
struct Positional {
  const char* name;
  int max_count;
  boost::program_options::value_semantic* value;
};

// Parses `args` into `vm`. A usage error prints the message and `visible`, and gives
// kExitBadInput; --help (which `visible` must declare) prints `help_options` (by default
// `visible`) and then `help_extra`, and gives kExitOk. Returns -1 when the command goes on.
int parse_options(const Args& args, const boost::program_options::options_description& visible,
                  std::optional<Positional> positional, boost::program_options::variables_map& vm,
                  std::string_view help_extra = {},
                  const boost::program_options::options_description* help_options = nullptr);

// Whether a file can be written at `path`, checked before the work whose result goes there: ""
// when it can, else why not (a folder, a folder that does not exist, no permission). Leaves no
// file behind.
std::string output_file_problem(const std::string& path);

}  // namespace arlsim::app
