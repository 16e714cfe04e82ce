// The input layer reads its files with the JSON toolkit of sim/parse/ (values with positions,
// diagnostics, field readers, units). Its names are visible in arlsim::input too, so that the
// specs and their callers name one namespace (input::Value, input::Diagnostics, ...). Declares
// only: include the sim/parse/ header of what you use.
#pragma once

namespace arlsim::parse {
class Value;
class Diagnostics;
class ObjectReader;
}  // namespace arlsim::parse

namespace arlsim::input {
using namespace arlsim::parse;
}  // namespace arlsim::input
