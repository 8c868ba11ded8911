// The push constants of every matmul kernel (matmul.comp, matmul_naive.comp,
// matmul_texel.comp). Keep in sync with struct matmul_push in src/ops/matmul.c.
//
// Batch z of a dispatch is batch_base + gl_WorkGroupID.z; its matrices start at
//   A: a_offset + z * a_batch_stride
//   B: b_offset + (z / b_group) * b_batch_stride   (stride 0: one B for all)
//   C: c_offset + z * c_batch_stride
// and bias element n is bias[bias_offset + n]. All in elements.
layout(push_constant) uniform Push {
    uint M, N, K;
    uint a_batch_stride, b_batch_stride, c_batch_stride;
    uint b_group;
    uint batch_base;
    uint a_offset, b_offset, bias_offset, c_offset;
    float alpha;
} p;
