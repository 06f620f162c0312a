# Which libtorch pilot's torch code builds against (docs/building.md, "Build flavours").
#
# A PyTorch wheel (the default: the pinned wheel in build/venv, scripts/torch-deps.sh; or a
# PyTorch already installed on a GPU machine, scripts/build-here.sh): its libraries are
# imported here by path, without find_package(Torch). TorchConfig.cmake of a CUDA wheel
# searches for the CUDA toolkit and stops where there is none, although a CPU build needs
# only libtorch_cpu and libc10. So:
#   - by default, libtorch_cpu and libc10 alone (flavour "cpu"): runs on any x86-64 Debian 12,
#     with no GPU and no CUDA toolkit;
#   - with PILOT_TORCH_CUDA=ON, libtorch_cuda and libc10_cuda too (flavour "cuda"), compiled
#     against the CUDA runtime headers of the nvidia wheels installed beside torch
#     (site-packages/nvidia/cu13/include, or .../cuda_runtime/include for CUDA 12 wheels; with
#     crt/ from nvidia-cuda-crt, or for CUDA 12 from nvidia-cuda-nvcc-cu12), or
#     PILOT_CUDA_INCLUDE_DIR. No nvcc: pilot has no CUDA kernels of its own.
# The interface mirrors the wheel's own Caffe2Targets.cmake: its include folders, its
# compile definitions, the C++11 ABI it is built with, and --no-as-needed around torch_cpu and
# torch_cuda, whose operator registrations are static initialisers the linker would
# otherwise drop.
#
# Neither PILOT_TORCH_VENV nor PILOT_TORCH_DIR: find_package(Torch) (Debian's libtorch 1.13,
# preset debian and the sanitizer build, or a ROCm libtorch).
#
# Sets TORCH_LIBRARIES, Torch_VERSION, TORCH_CXX_FLAGS and PILOT_TORCH_FLAVOUR (cpu, cuda,
# rocm) for the rest of the build.

set(PILOT_TORCH_VENV "" CACHE PATH
  "A virtual environment holding the pinned PyTorch wheel (scripts/torch-deps.sh; presets dev,
   release, cuda): libtorch is imported from its site-packages/torch")
set(PILOT_TORCH_DIR "" CACHE PATH
  "A PyTorch package folder (site-packages/torch, i.e. torch.utils.cmake_prefix_path/../..):
   libtorch is imported from it (scripts/build-here.sh)")
option(PILOT_TORCH_CUDA "Also link libtorch_cuda and libc10_cuda of the wheel (the CUDA path)" OFF)
set(PILOT_CUDA_INCLUDE_DIR "" CACHE STRING
  "The CUDA runtime headers for PILOT_TORCH_CUDA, a list: the folder of cuda_runtime_api.h (libcudart.so.N
   in ../lib), then others, one holding crt/host_config.h (default: the nvidia wheels beside torch)")

if(PILOT_TORCH_VENV AND NOT PILOT_TORCH_DIR)
  # Located by path, without importing torch: site-packages/torch of the venv.
  file(GLOB _pilot_torch_dirs "${PILOT_TORCH_VENV}/lib/python3*/site-packages/torch")
  if(NOT _pilot_torch_dirs)
    message(FATAL_ERROR "pilot: no torch wheel in ${PILOT_TORCH_VENV} (looked for lib/python3*/site-packages/torch): "
                        "run scripts/torch-deps.sh first")
  endif()
  list(GET _pilot_torch_dirs 0 _pilot_torch_dir)
elseif(PILOT_TORCH_DIR)
  get_filename_component(_pilot_torch_dir "${PILOT_TORCH_DIR}" ABSOLUTE)
else()
  set(_pilot_torch_dir "")
endif()

set(PILOT_TORCH_SYSTEM OFF)
if(NOT _pilot_torch_dir)
  find_package(Torch REQUIRED)
  # A libtorch found by find_package: Debian's 1.13 (with its libprotobuf.so.32), or a ROCm one.
  set(PILOT_TORCH_SYSTEM ON)
  # A CUDA build defines torch_cuda, a ROCm build torch_hip, Debian's neither.
  set(PILOT_TORCH_FLAVOUR cpu)
  if(TARGET torch_hip)
    set(PILOT_TORCH_FLAVOUR rocm)
  elseif(TARGET torch_cuda)
    set(PILOT_TORCH_FLAVOUR cuda)
  endif()
  return()
endif()

foreach(_lib c10 torch_cpu)
  if(NOT EXISTS "${_pilot_torch_dir}/lib/lib${_lib}.so")
    message(FATAL_ERROR "pilot: ${_pilot_torch_dir} is not a PyTorch package folder: lib/lib${_lib}.so is missing")
  endif()
endforeach()

# The version, from the headers (torch 2.8 and later keep it in torch/headeronly).
set(_pilot_version_h "${_pilot_torch_dir}/include/torch/headeronly/version.h")
if(NOT EXISTS "${_pilot_version_h}")
  set(_pilot_version_h "${_pilot_torch_dir}/include/torch/csrc/api/include/torch/version.h")
endif()
if(NOT EXISTS "${_pilot_version_h}")
  message(FATAL_ERROR "pilot: ${_pilot_torch_dir} has no include/torch/headeronly/version.h: not a PyTorch wheel with its C++ headers")
endif()
file(STRINGS "${_pilot_version_h}" _pilot_version_lines REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
set(Torch_VERSION "")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "TORCH_VERSION_${_part} ([0-9]+)" _m "${_pilot_version_lines}")
  list(APPEND Torch_VERSION "${CMAKE_MATCH_1}")
endforeach()
list(JOIN Torch_VERSION "." Torch_VERSION)
if(NOT Torch_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "pilot: cannot read the torch version from ${_pilot_version_h}")
endif()
if(Torch_VERSION VERSION_LESS 2.6)
  # Earlier wheels were built with the pre-C++11 string ABI, which pilot's other libraries
  # (Debian's) cannot share.
  message(FATAL_ERROR "pilot: torch ${Torch_VERSION} in ${_pilot_torch_dir}: pilot imports wheels of torch 2.6 or later (C++11 ABI); "
                      "use find_package through CMAKE_PREFIX_PATH for an older libtorch")
endif()
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")

function(_pilot_import_torch_lib name)
  add_library(pilot_torch_${name} SHARED IMPORTED GLOBAL)
  set_target_properties(pilot_torch_${name} PROPERTIES IMPORTED_LOCATION "${_pilot_torch_dir}/lib/lib${name}.so")
endfunction()
_pilot_import_torch_lib(c10)
_pilot_import_torch_lib(torch_cpu)
add_library(pilot_libtorch INTERFACE)
target_include_directories(pilot_libtorch SYSTEM INTERFACE
  "${_pilot_torch_dir}/include" "${_pilot_torch_dir}/include/torch/csrc/api/include")
target_compile_definitions(pilot_libtorch INTERFACE USE_DISTRIBUTED USE_C10D_GLOO USE_RPC USE_TENSORPIPE)
target_link_libraries(pilot_libtorch INTERFACE
  "-Wl,--push-state,--no-as-needed,$<TARGET_FILE:pilot_torch_torch_cpu>,--pop-state" pilot_torch_c10)
# The wheel's own libraries name their neighbours by RPATH ($ORIGIN/../../nvidia/cu13/lib for
# libcudart.so.13 and libcupti.so.13): only torch/lib goes on pilot's.
set(PILOT_TORCH_FLAVOUR cpu)

if(PILOT_TORCH_CUDA)
  foreach(_lib c10_cuda torch_cuda)
    if(NOT EXISTS "${_pilot_torch_dir}/lib/lib${_lib}.so")
      message(FATAL_ERROR "pilot: PILOT_TORCH_CUDA is ON but ${_pilot_torch_dir}/lib/lib${_lib}.so is missing: not a CUDA build of PyTorch")
    endif()
  endforeach()
  get_filename_component(_pilot_site "${_pilot_torch_dir}" DIRECTORY)
  # The CUDA runtime headers: PILOT_CUDA_INCLUDE_DIR (a list: the runtime headers' folder
  # first, then any other, such as one holding crt/), or the nvidia wheels beside torch.
  set(_pilot_cuda_incs ${PILOT_CUDA_INCLUDE_DIR})
  if(NOT _pilot_cuda_incs)
    foreach(_dir "${_pilot_site}/nvidia/cu13/include" "${_pilot_site}/nvidia/cuda_runtime/include")
      if(EXISTS "${_dir}/cuda_runtime_api.h")
        set(_pilot_cuda_incs "${_dir}")
        break()
      endif()
    endforeach()
  endif()
  set(_pilot_cuda_inc "")
  if(_pilot_cuda_incs)
    list(GET _pilot_cuda_incs 0 _pilot_cuda_inc)
  endif()
  if(NOT _pilot_cuda_inc OR NOT EXISTS "${_pilot_cuda_inc}/cuda_runtime_api.h")
    message(FATAL_ERROR "pilot: PILOT_TORCH_CUDA is ON but no cuda_runtime_api.h was found in ${_pilot_site}/nvidia/cu13/include "
                        "or ${_pilot_site}/nvidia/cuda_runtime/include (the nvidia-cuda-runtime wheel torch depends on); "
                        "install it, or point PILOT_CUDA_INCLUDE_DIR at CUDA runtime headers")
  endif()
  # The runtime headers include crt/host_config.h, which CUDA 13's runtime wheel lacks (it is
  # the nvidia-cuda-crt wheel's). Checked here, so that a compiler's own search path (a
  # toolkit copied under /usr/local/include) cannot stand in for it unnoticed.
  set(_pilot_crt "")
  foreach(_dir IN LISTS _pilot_cuda_incs)
    if(EXISTS "${_dir}/crt/host_config.h")
      set(_pilot_crt "${_dir}")
    endif()
  endforeach()
  if(NOT _pilot_crt)
    message(FATAL_ERROR "pilot: PILOT_TORCH_CUDA is ON but crt/host_config.h is in none of ${_pilot_cuda_incs}: "
                        "CUDA 13 ships it in the nvidia-cuda-crt wheel, CUDA 12 in nvidia-cuda-nvcc-cu12 (scripts/build-here.sh fetches either; "
                        "scripts/torch-deps.sh --cuda installs it), or add a CUDA toolkit's include folder to PILOT_CUDA_INCLUDE_DIR")
  endif()
  # libcudart.so.N beside the headers: ../lib in the nvidia wheels, ../lib64 or
  # ../targets/<arch>/lib in a CUDA toolkit.
  get_filename_component(_pilot_cuda_root "${_pilot_cuda_inc}/.." ABSOLUTE)
  file(GLOB _pilot_cudart "${_pilot_cuda_root}/lib/libcudart.so.[0-9]*" "${_pilot_cuda_root}/lib64/libcudart.so.[0-9]*"
       "${_pilot_cuda_root}/targets/*/lib/libcudart.so.[0-9]*")
  if(NOT _pilot_cudart)
    message(FATAL_ERROR "pilot: PILOT_TORCH_CUDA is ON but no libcudart.so.N is beside the headers ${_pilot_cuda_inc} "
                        "(looked in ${_pilot_cuda_root}/lib, lib64 and targets/*/lib)")
  endif()
  list(GET _pilot_cudart 0 _pilot_cudart)
  _pilot_import_torch_lib(c10_cuda)
  _pilot_import_torch_lib(torch_cuda)
  add_library(pilot_torch_cudart SHARED IMPORTED GLOBAL)
  set_target_properties(pilot_torch_cudart PROPERTIES IMPORTED_LOCATION "${_pilot_cudart}")
  target_include_directories(pilot_libtorch SYSTEM INTERFACE ${_pilot_cuda_incs})
  target_link_libraries(pilot_libtorch INTERFACE
    "-Wl,--push-state,--no-as-needed,$<TARGET_FILE:pilot_torch_torch_cuda>,--pop-state" pilot_torch_c10_cuda pilot_torch_cudart)
  set(PILOT_TORCH_FLAVOUR cuda)
  message(STATUS "pilot: CUDA runtime headers ${_pilot_cuda_incs} (crt/ in ${_pilot_crt}), ${_pilot_cudart}")
endif()

set(TORCH_LIBRARIES pilot_libtorch)
message(STATUS "pilot: libtorch imported from ${_pilot_torch_dir}")
