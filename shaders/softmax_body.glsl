// Causal-masked scaled softmax over rows of length Tk; the body shared by
// softmax.comp (subgroup reductions) and softmax_shared.comp (shared memory).
// The including file defines:
//   ROW_LANE, ROW_LANES        this invocation's lane in its row, lanes per row
//   row_max(x), row_sum(x)     reductions over the ROW_LANES lanes of a row
//
// Per row: keys first <= j < limit are allowed, where limit = min(Tk, kv_len[n],
// pos + 1 when causal, pos + window_right + 1) and first = pos - window_left
// (pos = i + q_offset; the window's sides when bounded); the rest give 0. Two
// sweeps over the row, four elements per access: (1) each lane keeps a running
// maximum m and a sum of exp(x - m) rescaled whenever m grows, then the lanes
// combine theirs; (2) y = exp((x - max) * scale) / sum, written four at a time.
// Subtracting before scaling keeps x - max exact for nearby values, so rows of
// magnitude 1e4 lose nothing to the rounding of scale * x (scale > 0, so the
// maximum is the same). A row with no allowed key (or whose allowed scores are
// all -inf) is all zeros. Each lane reads an element before writing it and
// touches only its own, so Y may alias X.

layout(constant_id = 1) const uint X_DTYPE = DTYPE_F32;
layout(constant_id = 2) const bool CAUSAL = false;
layout(constant_id = 3) const bool HAS_KV_LEN = false;
layout(constant_id = 4) const bool X_TEXELS = false;  // read X through its texel view
layout(constant_id = 5) const bool VEC4 = false;      // Tk % 4 == 0: aligned vec4 accesses
layout(constant_id = 6) const bool HAS_SINKS = false; // attention sinks (one logit per head)
// Entries a row may not see (past its limit) become MASKED_WEIGHT, not 0:
// attention's P, whose V matmul skips exactly those (src/ops/ops_common.h).
layout(constant_id = 7) const bool MARK_MASKED = false;
// And -inf entries too: where attention's mask or window made its not-allowed
// keys -inf. Without either a -inf is the data's (an Inf input, an f32
// overflow) and weighs 0 in IEEE arithmetic, as in the fused kernels.
layout(constant_id = 8) const bool MARK_NEG_INF = false;
// Attention's sliding window (p.window_left, p.window_right; -1 = unbounded),
// applied by position, so that a -inf the data made inside it weighs 0 as in
// the fused kernels, while the keys outside it are masked.
layout(constant_id = 9) const bool HAS_WINDOW = false;
// With HAS_SINKS: attention's scores carry ALiBi measured from each row's
// origin, the key position nearest the row's own (score_variants.glsl,
// alibi_origin_in over Tk), so the sink is moved to match.
layout(constant_id = 10) const bool SINK_ALIBI = false;

layout(set = 0, binding = 0) readonly buffer X32 { float x32[]; };
layout(set = 0, binding = 0) readonly buffer X16 { uint x16[]; };
layout(set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 1) readonly buffer KvLen { int kv_len[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };
layout(set = 0, binding = 2) buffer Y4 { vec4 y4[]; };
layout(set = 0, binding = 3) readonly buffer Sinks { float sinks[]; };
layout(set = 0, binding = 4) readonly buffer Alibi { float alibi[]; };  // with SINK_ALIBI
// X again: an RGBA view when VEC4, else an R view.
layout(set = 0, binding = TEXEL_BINDING(0)) uniform samplerBuffer x_tex;

// Keep in sync with struct softmax_push in src/ops/softmax.c.
layout(push_constant) uniform Push {
    uint rows;            // rows of X in this dispatch
    uint Tq, Tk;
    uint rows_per_batch;  // rows sharing one kv_len entry
    float scale_log2e;    // scale * log2(e): exp(a * scale) == exp2(a * scale_log2e)
    int q_offset;
    uint rows_per_workgroup;
    uint kv_row_base;     // row index of this dispatch's first row, for kv_len
    uint rows_per_head, heads;  // sinks: row r + kv_row_base is of head (that / rows_per_head) % heads
    int window_left, window_right;  // with HAS_WINDOW: >= 0, or -1 = unbounded
} p;

// Elements e .. e+3 of X (e % 4 == 0 when VEC4, so the aligned vec4 lies inside
// the row); those at or past `end` read as -inf, and without VEC4 are never fetched.
vec4 load4(uint e, uint end)
{
    if (VEC4) {
        vec4 v;
        if (X_TEXELS)
            v = texelFetch(x_tex, int(e >> 2));
        else if (X_DTYPE != DTYPE_F32)
            v = LOAD_PAIRS4(X_DTYPE, x16, e >> 1);
        else
            v = x4[e >> 2];
        return mix(v, vec4(NEG_INF), greaterThanEqual(uvec4(e) + uvec4(0, 1, 2, 3), uvec4(end)));
    }
    vec4 v = vec4(NEG_INF);
    for (uint c = 0; c < 4; c++)
        if (e + c < end)
            v[c] = X_TEXELS ? texelFetch(x_tex, int(e + c)).x
                            : LOAD_ELEMENT(X_DTYPE, x32, x16, e + c);
    return v;
}

void store4(uint e, uint end, vec4 v)
{
    if (VEC4) {
        y4[e >> 2] = v;
    } else {
        for (uint c = 0; c < 4; c++)
            if (e + c < end)
                y[e + c] = v[c];
    }
}

void softmax_row(uint row, bool row_valid)
{
    uint first = 0, limit = 0;
    uint base = row * p.Tk;
    if (row_valid) {
        int allowed = int(p.Tk), pos = int(row % p.Tq) + p.q_offset;
        if (HAS_KV_LEN)
            allowed = min(allowed, max(kv_len[(row + p.kv_row_base) / p.rows_per_batch], 0));
        if (CAUSAL)
            allowed = min(allowed, max(pos + 1, 0));
        if (HAS_WINDOW && p.window_right >= 0)
            allowed = min(allowed, max(pos + p.window_right + 1, 0));
        if (HAS_WINDOW && p.window_left >= 0)
            first = uint(clamp(pos - p.window_left, 0, allowed));
        limit = uint(allowed);
    }
    uint stride = 4 * ROW_LANES;
    // Whole strides before the window's first key hold nothing allowed.
    uint start = first / stride * stride + 4 * ROW_LANE;

    // Sweep 1: running maximum and rescaled sum per lane. While m is -inf every
    // element seen so far is -inf or NaN, so exp2(v) adds 0 or NaN: a NaN score
    // makes the sum NaN even where max() drops NaN operands.
    float m = NEG_INF, s = 0.0;
    for (uint j = start; j < limit; j += stride) {
        vec4 v = load4(base + j, base + limit);
        if (HAS_WINDOW)
            v = mix(v, vec4(NEG_INF), lessThan(uvec4(j) + uvec4(0, 1, 2, 3), uvec4(first)));
        float block_max = max(max(v.x, v.y), max(v.z, v.w));
        if (block_max > m) {
            s *= exp2((m - block_max) * p.scale_log2e);
            m = block_max;
        }
        vec4 e = exp2((v - (m == NEG_INF ? 0.0 : m)) * p.scale_log2e);
        s += (e.x + e.y) + (e.z + e.w);
    }
    float row_m = row_max(m);
    if (m != NEG_INF)
        s *= exp2((m - row_m) * p.scale_log2e);
    s = row_sum(s);

    if (!row_valid)
        return;
    // Nothing allowed, or only -inf: the row is zeros (a NaN keeps it NaN).
    bool empty = row_m == NEG_INF && !isnan(s);
    // A sink logit (raw, so in X's units it is divided by the scale) joins the
    // denominator of a row that has any allowed key.
    if (HAS_SINKS && !empty) {
        const float LOG2E = 1.4426950408889634;
        uint head = ((row + p.kv_row_base) / p.rows_per_head) % p.heads;
        float sink = sinks[head] * LOG2E;
        if (SINK_ALIBI) {   // sink - slope (origin - pos), as score_variants.glsl's
            int pos = int(row % p.Tq) + p.q_offset;
            int origin = clamp(pos, 0, max(int(p.Tk) - 1, 0));
            sink -= alibi[head] * LOG2E * float(origin - pos);
        }
        sink /= p.scale_log2e;
        if (SINK_ALIBI && isinf(sink) && !isinf(sinks[head]))  // as sink_from_origin
            sink = sign(sink) * FLT_MAX;
        float top = max(row_m, sink);
        s = s * exp2((row_m - top) * p.scale_log2e) + exp2((sink - top) * p.scale_log2e);
        row_m = top;
    }
    float inv = empty ? 0.0 : 1.0 / s;
    float shift = row_m == NEG_INF ? 0.0 : row_m;
    // Sweep 2: normalised values over the allowed keys, exact zeros past them
    // (MASKED_WEIGHT past them with MARK_MASKED, and at -inf with MARK_NEG_INF).
    for (uint j = 4 * ROW_LANE; j < p.Tk; j += stride) {
        vec4 v = j < limit && j + 4 > first ? load4(base + j, base + limit) : vec4(NEG_INF);
        vec4 out_v = exp2((v - shift) * p.scale_log2e) * inv;
        uvec4 keys = uvec4(j) + uvec4(0, 1, 2, 3);
        bvec4 allowed = bvec4(uvec4(lessThan(keys, uvec4(limit))) &
                              uvec4(greaterThanEqual(keys, uvec4(first))));
        if (MARK_MASKED) {
            vec4 marked = mix(vec4(MASKED_WEIGHT), out_v, allowed);
            bvec4 kept = MARK_NEG_INF ? notEqual(v, vec4(NEG_INF)) : bvec4(true);
            store4(base + j, base + p.Tk, mix(vec4(MASKED_WEIGHT), marked, kept));
        } else {
            store4(base + j, base + p.Tk, mix(vec4(0.0), out_v, allowed));
        }
    }
}
