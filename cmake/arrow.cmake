# Arrow C++ and Parquet C++ for mploader::parquet, from the pyarrow wheel in one of the Python
# environments (MPLOADER_PYTHON_ENVS; scripts/install-deps puts pyarrow in .venv). The wheel
# ships libarrow and libparquet built with the C++11 string ABI, as the torch wheel is, with
# their headers; Debian 12 packages no Arrow. The wheel has only versioned libraries
# (libarrow.so.2600), so they are linked by full path. Their headers need C++20: only the
# files of parquet/ see them, and the public header does not include them.
# Sets MPLOADER_ARROW_FOUND, and the imported targets mploader::libarrow and
# mploader::libparquet. MPLOADER_PYARROW_DIR (the wheel's folder) may be set by hand.
if(NOT MPLOADER_PYARROW_DIR)
  foreach(env ${MPLOADER_PYTHON_ENVS})
    file(GLOB _mploader_pyarrow LIST_DIRECTORIES true "${env}/lib/python3*/site-packages/pyarrow")
    if(_mploader_pyarrow)
      list(GET _mploader_pyarrow 0 _mploader_pyarrow)
      set(MPLOADER_PYARROW_DIR "${_mploader_pyarrow}" CACHE PATH
          "The pyarrow wheel's folder, whose libarrow and libparquet mploader::parquet links")
      break()
    endif()
  endforeach()
endif()
set(MPLOADER_ARROW_FOUND OFF)
if(MPLOADER_PYARROW_DIR)
  file(GLOB MPLOADER_ARROW_LIBRARY "${MPLOADER_PYARROW_DIR}/libarrow.so.[0-9]*")
  file(GLOB MPLOADER_PARQUET_LIBRARY "${MPLOADER_PYARROW_DIR}/libparquet.so.[0-9]*")
  if(MPLOADER_ARROW_LIBRARY AND MPLOADER_PARQUET_LIBRARY AND
     EXISTS "${MPLOADER_PYARROW_DIR}/include/parquet/arrow/reader.h")
    list(GET MPLOADER_ARROW_LIBRARY 0 MPLOADER_ARROW_LIBRARY)
    list(GET MPLOADER_PARQUET_LIBRARY 0 MPLOADER_PARQUET_LIBRARY)
    set(MPLOADER_ARROW_FOUND ON)
  endif()
endif()
if(MPLOADER_ARROW_FOUND AND NOT TARGET mploader::libarrow)
  add_library(mploader::libarrow SHARED IMPORTED GLOBAL)
  set_target_properties(mploader::libarrow PROPERTIES IMPORTED_LOCATION "${MPLOADER_ARROW_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${MPLOADER_PYARROW_DIR}/include")
  add_library(mploader::libparquet SHARED IMPORTED GLOBAL)
  set_target_properties(mploader::libparquet PROPERTIES
                        IMPORTED_LOCATION "${MPLOADER_PARQUET_LIBRARY}"
                        INTERFACE_LINK_LIBRARIES mploader::libarrow)
endif()
