# A tree that breaks the rule, for the ctest entry module_includes_finds_a_breach: gates links
# core alone, yet one of its files includes a drivers header.
get_filename_component(TS_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR} ABSOLUTE)
set(TS_MODULES ts_core ts_gates ts_drivers)
set(TS_DIR_ts_core core)
set(TS_LINKS_ts_core "")
set(TS_DIR_ts_gates gates)
set(TS_LINKS_ts_gates ts_core)
set(TS_DIR_ts_drivers drivers)
set(TS_LINKS_ts_drivers ts_gates ts_core)
