# Compiles GLSL compute shaders to SPIR-V with glslangValidator, validates them
# with spirv-val, and turns each into a C header (a uint32_t array) in the build
# tree. Nothing is generated into the source tree.
#
#   vkattn_add_shaders(OUT_VAR shaders/a.comp shaders/b.comp ...)
#   vkattn_add_shader_variant(OUT_VAR shaders/a.comp a_emulated -DDEFINE ...)
#
# append the generated headers to OUT_VAR (to be added to a target's sources).
# A variant is the same source built under another name with preprocessor
# definitions (the emulated cooperative-matrix kernels).

set(VKATTN_SPIRV_TARGET_ENV vulkan1.1)

function(vkattn_add_shader_variant out_var src name)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/shaders)
  file(MAKE_DIRECTORY ${out_dir})
  set(debug_flag "$<$<CONFIG:Debug>:-g>")
  set(spv ${out_dir}/${name}.spv)
  set(hdr ${out_dir}/${name}_spv.h)
  # Two rules: glslang's depfile names the .spv (so edits to an included .glsl
  # rebuild it), and the header is made from the validated .spv.
  add_custom_command(
    OUTPUT ${spv}
    COMMAND Vulkan::glslangValidator -V --target-env ${VKATTN_SPIRV_TARGET_ENV}
            ${debug_flag} ${ARGN} -I${PROJECT_SOURCE_DIR}/shaders
            --depfile ${spv}.d -o ${spv} ${PROJECT_SOURCE_DIR}/${src}
    COMMAND ${SPIRV_VAL} --target-env ${VKATTN_SPIRV_TARGET_ENV} ${spv}
    DEPENDS ${PROJECT_SOURCE_DIR}/${src}
    DEPFILE ${spv}.d
    COMMENT "Compiling shader ${name}"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_command(
    OUTPUT ${hdr}
    COMMAND ${CMAKE_COMMAND} -DSPV=${spv} -DHDR=${hdr} -DNAME=${name}_spv
            -P ${PROJECT_SOURCE_DIR}/cmake/spirv_to_header.cmake
    DEPENDS ${spv} ${PROJECT_SOURCE_DIR}/cmake/spirv_to_header.cmake
    VERBATIM)
  set(${out_var} ${${out_var}} ${hdr} PARENT_SCOPE)
endfunction()

function(vkattn_add_shaders out_var)
  set(headers ${${out_var}})
  foreach(src IN LISTS ARGN)
    get_filename_component(name ${src} NAME_WE)
    vkattn_add_shader_variant(headers ${src} ${name})
  endforeach()
  set(${out_var} ${headers} PARENT_SCOPE)
endfunction()
