# Helpers shared by every ignc library.
#
# ign_add_library(NAME SOURCES... [EXCEPTIONS] [DEPENDS targets...] [LINK libs...])
# Builds a static library against the shared libMLIR/libLLVM. Code that uses
# C++ exceptions (ONNX's checker, nlohmann/json) passes EXCEPTIONS;
# everything else follows LLVM and builds without them.
function(ign_add_library name)
  cmake_parse_arguments(ARG "EXCEPTIONS" "" "DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(NOT ARG_EXCEPTIONS)
    target_compile_options(${name} PRIVATE -fno-exceptions)
  endif()
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()

# ign_register_target(LIBRARY FUNCTION)
# A target folder's one registration line: LIBRARY holds the target and
# FUNCTION (a `void ns::fn()`, fully qualified) registers it. targets/
# generates registerBuiltinTargets() calling every FUNCTION and links every
# LIBRARY into IgnTargets.
function(ign_register_target library function)
  set_property(GLOBAL APPEND PROPERTY IGN_TARGET_LIBRARIES ${library})
  set_property(GLOBAL APPEND PROPERTY IGN_TARGET_FUNCTIONS ${function})
endfunction()
