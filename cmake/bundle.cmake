# `cmake --build BUILD --target bundle`: the offline bundle
# dist/lector-<version>-linux-x86_64.tar.xz (scripts/bundle, docs/DEPLOY.md).
# scripts/bundle builds its own lector (RUNPATH $ORIGIN/../lib) in
# BUILD/bundle-build; the normal BUILD/lector is left as it is.
add_custom_target(bundle
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/bundle --build-dir ${CMAKE_BINARY_DIR}/bundle-build
          --out ${CMAKE_SOURCE_DIR}/dist
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  USES_TERMINAL
  COMMENT "scripts/bundle -> dist/lector-${PROJECT_VERSION}-linux-x86_64.tar.xz")

# `cmake --build BUILD --target bundle-cuda`: the same, and the CUDA archive
# dist/lector-<version>-cuda<major>-linux-x86_64.tar.xz that unpacks over it
# (cuBLAS, cuDNN, NVRTC of LECTOR_BUNDLE_CUDA_ROOT / LECTOR_BUNDLE_CUDNN_ROOT;
# hundreds of MiB: minutes to compress).
set(LECTOR_BUNDLE_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit the bundle-cuda target copies from")
set(LECTOR_BUNDLE_CUDNN_ROOT "" CACHE PATH "cuDNN directory for bundle-cuda (empty: the toolkit's, else the system's)")
set(_cudnn_arg)
if(LECTOR_BUNDLE_CUDNN_ROOT)
  set(_cudnn_arg --cudnn-root ${LECTOR_BUNDLE_CUDNN_ROOT})
endif()
add_custom_target(bundle-cuda
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/bundle --build-dir ${CMAKE_BINARY_DIR}/bundle-build
          --out ${CMAKE_SOURCE_DIR}/dist --with-cuda --cuda-root ${LECTOR_BUNDLE_CUDA_ROOT} ${_cudnn_arg}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  USES_TERMINAL
  COMMENT "scripts/bundle --with-cuda -> dist/lector-${PROJECT_VERSION}-cuda<major>-linux-x86_64.tar.xz")
