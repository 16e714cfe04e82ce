// Shared Boost.Program_options plumbing for the subcommands.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>

#include "app/commands.h"

namespace arlsim::app {

// Parses `args`; returns -1 on success, or the exit status after printing a usage error.
int parse_options(const Args& args, const boost::program_options::options_description& visible,
                  const boost::program_options::options_description& hidden,
                  const boost::program_options::positional_options_description& positional,
                  boost::program_options::variables_map& vm);

}  // namespace arlsim::app
