// A graph header that reaches up into rl: the layering check must reject it.
#pragma once

#include "sim/core/time.h"
#include "sim/rl/step.h"
