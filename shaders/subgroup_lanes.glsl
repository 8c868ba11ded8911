// Reductions over lanes of a subgroup by shuffles (GL_KHR_shader_subgroup_shuffle).
#ifndef SUBGROUP_LANES_GLSL
#define SUBGROUP_LANES_GLSL
// The sum and the largest of x over the lanes whose indices differ from this
// lane's only in the bits from FIRST (a power of 2) up to END: a butterfly of
// shuffles that leaves every one of those lanes with the result. Over a row
// cluster (1 up to ROW_CLUSTER), over the lanes of a row of the shared-memory
// softmax (ROW_LANES up to SG_SIZE), over the subgroup (1 up to SG_SIZE).
float lanes_sum(float x, uint first, uint end)
{
    for (uint offset = first; offset < end; offset *= 2)
        x += subgroupShuffleXor(x, offset);
    return x;
}
float lanes_max(float x, uint first, uint end)
{
    for (uint offset = first; offset < end; offset *= 2)
        x = max(x, subgroupShuffleXor(x, offset));
    return x;
}
#endif
