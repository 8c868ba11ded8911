# cmake -DSPV=in.spv -DHDR=out.h -DNAME=symbol -P spirv_to_header.cmake
# Writes the SPIR-V words as a static const uint32_t array (host byte order is
# little-endian on every platform vkattn targets; SPIR-V words are written in it).
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV}: size is not a multiple of 4 bytes")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n  " words "${words}")
file(WRITE ${HDR} "/* Generated from ${SPV}; do not edit. */\n"
  "static const uint32_t ${NAME}[] = {\n  ${words}\n};\n")
