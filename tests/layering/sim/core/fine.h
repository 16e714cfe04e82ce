// Core includes nothing above itself: allowed.
#pragma once

#include "sim/core/time.h"
