// The order of a workgroup's subgroups, reversed for the tests on lavapipe.
//
// lavapipe runs a workgroup's subgroups one after another, each up to the next
// barrier, always lowest first. A shared-memory hazard between two subgroups
// with no barrier between their accesses then shows only in one direction: a
// value a higher subgroup writes and a lower one reads arrives too late and
// the test fails, but one a lower subgroup writes (subgroup 0's thread 0,
// most often) and a higher one reads is always there in time, and a value a
// lower subgroup reads before a higher one overwrites it is always read
// first. A GPU runs its subgroups in any order. Reversed, every
// role a kernel gives by subgroup or invocation index goes to the subgroup
// lavapipe runs in the opposite place, so each such hazard fails on lavapipe
// in one of the two orders; mixed, the odd or the even workgroups of a
// dispatch are reversed, so that every dispatch of two workgroups or more
// meets both.
//
// Kernels whose shared memory is read by subgroups other than its writer take
// their subgroup and invocation indices from here rather than from
// gl_SubgroupID and gl_LocalInvocationIndex, and include this file after their
// workgroup size (before its layout, gl_WorkGroupSize is 1 x 1 x 1 and the
// reversal would never apply); tests/invocation_order_test.py checks both. The
// host sets SUBGROUP_ORDER only on lavapipe, and only in the tests
// (VKATTN_SUBGROUP_ORDER, src/context.c and src/pipeline.c), where an
// invocation's index is its subgroup's times the subgroup size plus its lane;
// a workgroup whose last subgroup is partial keeps its order. An invocation's
// lane, and so every subgroup operation, is unchanged.

#ifndef INVOCATION_ORDER_GLSL
#define INVOCATION_ORDER_GLSL

// Keep in sync with subgroup_order in src/internal.h and
// VKATTN_SPEC_SUBGROUP_ORDER there: the constant_id after POISON_SHARED's
// (poison_shared.glsl). 0: the natural order; 1: reversed; 2 and 3: reversed
// in the odd and in the even workgroups, so that one dispatch meets both.
layout(constant_id = 25) const uint SUBGROUP_ORDER = 0;

bool subgroups_reversed()
{
    uint parity = (gl_WorkGroupID.x + gl_WorkGroupID.y + gl_WorkGroupID.z) % 2u;
    bool wanted = SUBGROUP_ORDER == 1u || (SUBGROUP_ORDER >= 2u && parity == 3u - SUBGROUP_ORDER);
    return wanted && gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z %
                             gl_SubgroupSize == 0u;
}

// gl_SubgroupID, counted from the other end where the order is reversed.
uint subgroup_index()
{
    return subgroups_reversed() ? gl_NumSubgroups - 1u - gl_SubgroupID : gl_SubgroupID;
}

// gl_LocalInvocationIndex, with the subgroups' order reversed as above.
uint invocation_index()
{
    return subgroups_reversed() ? subgroup_index() * gl_SubgroupSize + gl_SubgroupInvocationID
                                : gl_LocalInvocationIndex;
}

#endif
