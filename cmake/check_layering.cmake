cmake_minimum_required(VERSION 3.25)
# Fails when a source file includes a header of a module above its own. Run by the build (target
# arlsim_layering) as: cmake -DSOURCE_DIR=<repository> -P check_layering.cmake
#
# Each module may include itself and the modules listed for it (the closure of what it builds on).
# The simulator's modules, from the bottom: core, parse (JSON with positions, diagnostics, units),
# trace, input (the specs), graph (placements, stages, the step graph; it needs only core), model
# (the cost model, which prices operations on placements), exec (the graph's executors), rl (the stage simulators and the step), report (outputs). planner builds
# on all of sim; app on everything.
set(allowed_sim_core "core")
set(allowed_sim_parse "core;parse")
set(allowed_sim_trace "core;parse;trace")
set(allowed_sim_input "core;parse;trace;input")
set(allowed_sim_model "core;parse;trace;input;graph;model")
set(allowed_sim_graph "core;graph")
set(allowed_sim_exec "core;parse;trace;input;model;graph;exec")
set(allowed_sim_rl "core;parse;trace;input;model;graph;exec;rl")
set(allowed_sim_report "core;parse;trace;input;model;graph;exec;rl;report")
set(modules core parse trace input model graph exec rl report)

set(problems "")
foreach(module IN LISTS modules)
  file(GLOB sources "${SOURCE_DIR}/sim/${module}/*.h" "${SOURCE_DIR}/sim/${module}/*.cpp")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" includes REGEX "^#include \"[a-z]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "^#include \"([a-z]+)/([a-z_]+)/" _ "${line}")
      set(top "${CMAKE_MATCH_1}")
      set(dep "${CMAKE_MATCH_2}")
      file(RELATIVE_PATH rel "${SOURCE_DIR}" "${source}")
      if(NOT top STREQUAL "sim")
        list(APPEND problems "${rel}: ${line} (sim/ includes nothing outside sim/)")
      elseif(NOT dep IN_LIST allowed_sim_${module})
        string(REPLACE ";" ", " allowed "${allowed_sim_${module}}")
        list(APPEND problems "${rel}: ${line} (sim/${module} may include sim/{${allowed}})")
      endif()
    endforeach()
  endforeach()
endforeach()
# The planner builds on the simulator, never on the program.
file(GLOB sources "${SOURCE_DIR}/planner/*.h" "${SOURCE_DIR}/planner/*.cpp")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" includes REGEX "^#include \"app/")
  foreach(line IN LISTS includes)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${source}")
    list(APPEND problems "${rel}: ${line} (planner/ may include sim/ and planner/ only)")
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "upward includes:\n  ${text}")
endif()
