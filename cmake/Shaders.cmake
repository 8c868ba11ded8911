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
#
#   vkattn_add_shader_khr(OUT_VAR shaders/a.comp a_khr)
#
# builds a cooperative-matrix kernel for VK_KHR_cooperative_matrix: Debian 12's
# glslang compiles only GL_NV_cooperative_matrix, so the source is compiled with
# COOPMAT_KHR defined (leaving out what KHR cannot express), validated in its NV
# form, and rewritten instruction for instruction by tools/coopmat_khr.c. This
# SPIRV-Tools predates the KHR extension and cannot validate the result; the
# ctest coopmat_khr checks the rewrite instead (tests/coopmat_khr_test.py).
#
#   vkattn_add_shader_khr_bf16(OUT_VAR a_khr a_khr_bf16)
#
# the KHR build a_khr again with its f16 A and B operands bf16 (SPV_KHR_bfloat16;
# the tool's --bf16), made from the same NV form: for a kernel specialized to
# keep bf16 bits in its operand arrays. Checked likewise (coopmat_khr).

set(VKATTN_SPIRV_TARGET_ENV vulkan1.1)

# The C header (a uint32_t array named NAME_spv) made from a module.
function(vkattn_spirv_header spv hdr name)
  add_custom_command(
    OUTPUT ${hdr}
    COMMAND ${CMAKE_COMMAND} -DSPV=${spv} -DHDR=${hdr} -DNAME=${name}_spv
            -P ${PROJECT_SOURCE_DIR}/cmake/spirv_to_header.cmake
    DEPENDS ${spv} ${PROJECT_SOURCE_DIR}/cmake/spirv_to_header.cmake
    VERBATIM)
endfunction()

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
  vkattn_spirv_header(${spv} ${hdr} ${name})
  set(${out_var} ${${out_var}} ${hdr} PARENT_SCOPE)
endfunction()

function(vkattn_add_shader_khr out_var src name)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/shaders)
  set(nv_name ${name}_nv)
  vkattn_add_shader_variant(unused ${src} ${nv_name} -DCOOPMAT_KHR)
  set(spv ${out_dir}/${name}.spv)
  set(hdr ${out_dir}/${name}_spv.h)
  add_custom_command(
    OUTPUT ${spv}
    COMMAND vkattn-coopmat-khr ${out_dir}/${nv_name}.spv ${spv}
    DEPENDS ${out_dir}/${nv_name}.spv vkattn-coopmat-khr
    COMMENT "Rewriting shader ${nv_name} for VK_KHR_cooperative_matrix"
    VERBATIM)
  vkattn_spirv_header(${spv} ${hdr} ${name})
  set(${out_var} ${${out_var}} ${hdr} PARENT_SCOPE)
endfunction()

function(vkattn_add_shader_khr_bf16 out_var khr_name name)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/shaders)
  set(spv ${out_dir}/${name}.spv)
  set(hdr ${out_dir}/${name}_spv.h)
  add_custom_command(
    OUTPUT ${spv}
    COMMAND vkattn-coopmat-khr --bf16 ${out_dir}/${khr_name}_nv.spv ${spv}
    DEPENDS ${out_dir}/${khr_name}_nv.spv vkattn-coopmat-khr
    COMMENT "Rewriting shader ${khr_name}_nv for VK_KHR_cooperative_matrix with bf16 operands"
    VERBATIM)
  vkattn_spirv_header(${spv} ${hdr} ${name})
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
