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
