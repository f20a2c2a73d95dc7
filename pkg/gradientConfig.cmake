# gradient.h's CMake package: find_package(gradient) gives the INTERFACE target gradient::gradient
# (the include directory of gradient.h, and libm). Installed by `make install` or CMake's install
# into <prefix>/lib/cmake/gradient; the prefix is found from this file's place, so the installed
# tree can move.
if(NOT TARGET gradient::gradient)
    get_filename_component(_gradient_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
    add_library(gradient::gradient INTERFACE IMPORTED)
    set_target_properties(gradient::gradient PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_gradient_prefix}/include")
    if(UNIX)
        set_property(TARGET gradient::gradient PROPERTY INTERFACE_LINK_LIBRARIES m)
    endif()
    unset(_gradient_prefix)
endif()
