# The PyTorch tier (issues 19, 22, 40) runs once per torch: the project's virtual environment's
# (.venv, torch 2.13 from PyPI, made by scripts/setup.sh) and Debian's python3-torch under
# /usr/bin/python3, the oldest torch gpuattr supports. GPUATTR_TORCH_PYTHONS lists other
# interpreters instead. Each interpreter's tests are named `<program>:torch-<version>:<case>`, so
# ctest's output says which torch ran; an interpreter without torch is left out, and with none
# at all the tests run once and fail, saying so (never a skip). GPUATTR_TORCH_PYTHON, the first
# one found, serves the tests that need one torch only (attach).
set(GPUATTR_TORCH_PYTHONS "${PROJECT_SOURCE_DIR}/.venv/bin/python;/usr/bin/python3" CACHE STRING
    "Interpreters the PyTorch tier runs under, each once")
set(GPUATTR_TORCH_VARIANTS "")
set(GPUATTR_TORCH2_VARIANTS "")  # the torch >= 2 ones: compile, FSDP2, Kineto
set(GPUATTR_TORCH_PYTHON "")
set(_torch_versions_found "")
foreach(_candidate IN LISTS GPUATTR_TORCH_PYTHONS)
  execute_process(COMMAND ${_candidate} -c "import torch; print(torch.__version__.split('+')[0])"
    OUTPUT_VARIABLE _torch_version OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _gpuattr_no_torch ERROR_QUIET)
  if(NOT _gpuattr_no_torch EQUAL 0 OR "${_torch_version}" IN_LIST _torch_versions_found)
    continue()
  endif()
  list(APPEND _torch_versions_found "${_torch_version}")
  set(_variant "torch-${_torch_version}=GPUATTR_TORCH_PYTHON=${_candidate}")
  list(APPEND GPUATTR_TORCH_VARIANTS "${_variant}")
  if(_torch_version VERSION_GREATER_EQUAL 2)
    list(APPEND GPUATTR_TORCH2_VARIANTS "${_variant}")
  endif()
  if(NOT GPUATTR_TORCH_PYTHON)
    set(GPUATTR_TORCH_PYTHON ${_candidate})
  endif()
  message(STATUS "gpuattr: the PyTorch tier runs torch ${_torch_version} (${_candidate})")
endforeach()
if(NOT GPUATTR_TORCH_VARIANTS)
  message(WARNING "No interpreter in GPUATTR_TORCH_PYTHONS imports torch: the PyTorch tests will "
                  "fail until scripts/setup.sh has installed it and this is configured again.")
  set(GPUATTR_TORCH_VARIANTS "torch-missing=GPUATTR_TORCH_PYTHON=")
endif()
if(NOT GPUATTR_TORCH2_VARIANTS)
  set(GPUATTR_TORCH2_VARIANTS "torch2-missing=GPUATTR_TORCH_PYTHON=")
endif()
# The annotator has two paths (issue 44): its compiled core (python/CMakeLists.txt), the default,
# and the pure-Python fallback. The e2e tier runs each torch's cases on both
# (GPUATTR_TORCH_E2E_VARIANTS, GPUATTR_TORCH2_E2E_VARIANTS), the fallback's named
# `torch-<version>-python` (GPUATTR_PYTORCH_CORE=python). The sanitizer builds run the compiled
# path only: it is the new code, and the fallback is the Python that the main build tests.
set(GPUATTR_TORCH_E2E_VARIANTS ${GPUATTR_TORCH_VARIANTS})
set(GPUATTR_TORCH2_E2E_VARIANTS ${GPUATTR_TORCH2_VARIANTS})
if(TARGET gpuattr_python_core AND NOT GPUATTR_SANITIZE)
  foreach(_list GPUATTR_TORCH_E2E_VARIANTS GPUATTR_TORCH2_E2E_VARIANTS)
    set(_both "")
    foreach(_variant IN LISTS ${_list})
      string(REGEX REPLACE "^([^=]*)=(.*)$" "\\1-python=\\2|GPUATTR_PYTORCH_CORE=python"
             _python_variant "${_variant}")
      list(APPEND _both "${_variant}" "${_python_variant}")
    endforeach()
    set(${_list} "${_both}")
  endforeach()
endif()
