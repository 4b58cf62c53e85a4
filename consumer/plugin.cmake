# consumer/plugin.cmake: the babeltrace2 plugin `rasp` (sink.rasp.report) and the report
# library it shares with the tests. Included by consumer/CMakeLists.txt.
#
# rasp-report: grouping and output, no babeltrace2 types. It does not link rasp-estimate
# itself so unit tests can pair it with a stand-in estimator; the plugin links both.
add_library(rasp-report STATIC report.c)
set_target_properties(rasp-report PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(rasp-report PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(rasp-report PUBLIC m)

# The plugin: babeltrace2 loads every .so in a --plugin-path directory, so it gets a
# directory of its own (build/lib also holds librasp.so, whose constructor would load the
# LTTng provider into babeltrace2). No C_VISIBILITY_PRESET: plugin.c also keeps the
# BT_PLUGIN_MODULE symbols visible with a pragma should a parent scope hide them.
set(RASP_BT2_PLUGIN_BUILD_DIR ${CMAKE_BINARY_DIR}/lib/babeltrace2 CACHE INTERNAL "")
add_library(rasp-bt2-plugin MODULE plugin.c sink.c)
set_target_properties(rasp-bt2-plugin PROPERTIES
  PREFIX ""
  OUTPUT_NAME rasp-bt2-plugin
  LIBRARY_OUTPUT_DIRECTORY ${RASP_BT2_PLUGIN_BUILD_DIR})
# --no-undefined: a symbol missing from the estimator fails the link, not the plugin load.
target_link_options(rasp-bt2-plugin PRIVATE -Wl,--no-undefined)
target_link_libraries(rasp-bt2-plugin PRIVATE rasp-report rasp-estimate rasp-events-headers PkgConfig::BABELTRACE2)

# Install into the directory babeltrace2 searches by itself (its libdir from pkg-config +
# babeltrace2/plugins), whatever CMAKE_INSTALL_PREFIX is: a plugin elsewhere would need
# --plugin-path on every babeltrace2 command. DESTDIR staging still applies. Override with
# -DRASP_BT2_PLUGIN_INSTALL_DIR=DIR (relative to the prefix, or absolute).
pkg_get_variable(RASP_BT2_LIBDIR babeltrace2 libdir)
if(RASP_BT2_LIBDIR)
  set(rasp_bt2_default "${RASP_BT2_LIBDIR}/babeltrace2/plugins")
else()
  set(rasp_bt2_default "${CMAKE_INSTALL_LIBDIR}/babeltrace2/plugins")
endif()
set(RASP_BT2_PLUGIN_INSTALL_DIR "${rasp_bt2_default}" CACHE STRING
    "Where cmake --install puts the babeltrace2 plugin (relative to the prefix, or absolute)")
install(TARGETS rasp-bt2-plugin LIBRARY DESTINATION ${RASP_BT2_PLUGIN_INSTALL_DIR})
