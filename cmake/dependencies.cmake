# Every external package tandem builds against, found in one place. ./tandem installs the Debian
# packages that provide them (see tandem's `ensure_packages`).

find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(PkgConfig REQUIRED)
# Debian 12 ships SimGrid 3.32 (libsimgrid-dev) with only a pkg-config file, simgrid.pc: no CMake
# package config and no FindSimGrid.cmake, so it is found through pkg-config.
pkg_check_modules(SimGrid REQUIRED IMPORTED_TARGET simgrid>=3.32)
pkg_check_modules(OpenBLAS REQUIRED IMPORTED_TARGET openblas)
find_package(MPI REQUIRED COMPONENTS CXX)
if(TANDEM_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()

# CUDA: AUTO builds the CUDA parts when a toolkit is found (at /usr/local/cuda or on PATH).
set(TANDEM_HAVE_CUDA OFF)
if(NOT TANDEM_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_library(TANDEM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
    set(TANDEM_HAVE_CUDA ON)
  elseif(TANDEM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TANDEM_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "tandem: CUDA parts ${TANDEM_HAVE_CUDA}")
