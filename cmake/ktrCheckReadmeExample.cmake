# cmake -DREADME=README.md -DSOURCE=examples/embed.cpp -P ktrCheckReadmeExample.cmake
# Fails unless the README's first ```cpp block is exactly the source file (so the README's example is the one CI
# builds and runs).
file(READ ${README} readme)
file(READ ${SOURCE} source)
string(FIND "${readme}" "```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} block)
if(NOT block STREQUAL source)
  message(FATAL_ERROR "${README}: the ```cpp block differs from ${SOURCE}; paste the file into the README")
endif()
message(STATUS "README example matches ${SOURCE}")
