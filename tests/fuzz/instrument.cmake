# Included by the top-level CMakeLists.txt when TANDEM_FUZZ is ON, before any library is added:
# every object of the build gets libFuzzer's coverage instrumentation, AddressSanitizer and
# UndefinedBehaviorSanitizer. An undefined-behaviour report aborts (no recovery), so that libFuzzer
# counts it as a crash. The fuzz targets themselves link libFuzzer's main (tests/fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TANDEM_FUZZ needs clang (libFuzzer): configure with `cmake --preset fuzz` "
                      "or -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
endif()
set(TANDEM_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
add_compile_options(-fsanitize=fuzzer-no-link ${TANDEM_FUZZ_SANITIZERS} -fno-omit-frame-pointer)
add_link_options(${TANDEM_FUZZ_SANITIZERS})
