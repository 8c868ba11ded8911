// Causal-masked scaled softmax over rows of length Tk; the body shared by
// softmax.comp (subgroup reductions) and softmax_shared.comp (shared memory).
// The including file defines:
//   ROW_LANE, ROW_LANES        this invocation's lane in its row, lanes per row
//   row_index()                the row this invocation works on
//   row_max(x), row_sum(x)     reductions over the ROW_LANES lanes of a row
//
// Per row: keys j < limit are allowed, where limit = min(Tk, kv_len[n],
// i + q_offset + 1 when causal); the rest give 0. Three sweeps over the row:
// max of x; exp((x - max) * scale) written to y and summed; y scaled by 1/sum.
// Subtracting before scaling keeps x - max exact for nearby values, so rows of
// magnitude 1e4 lose nothing to the rounding of scale * x (scale > 0, so the
// maximum is the same). Each lane only touches its own elements: y may alias x.
// A row with no allowed key (or whose allowed scores are all -inf) is all zeros.

layout(constant_id = 1) const bool X_F16 = false;
layout(constant_id = 2) const bool CAUSAL = false;
layout(constant_id = 3) const bool HAS_KV_LEN = false;

layout(set = 0, binding = 0) readonly buffer X32 { float x32[]; };
layout(set = 0, binding = 0) readonly buffer X16 { uint x16[]; };
layout(set = 0, binding = 1) readonly buffer KvLen { int kv_len[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };

// Keep in sync with struct softmax_push in src/ops/softmax.c.
layout(push_constant) uniform Push {
    uint rows;            // all rows of X
    uint Tq, Tk;
    uint rows_per_batch;  // rows sharing one kv_len entry
    float scale;
    int q_offset;
    uint rows_per_workgroup;
} p;

void softmax_row(uint row, bool row_valid)
{
    uint limit = 0;
    uint base = row * p.Tk;
    if (row_valid) {
        int allowed = int(p.Tk);
        if (HAS_KV_LEN)
            allowed = min(allowed, max(kv_len[row / p.rows_per_batch], 0));
        if (CAUSAL)
            allowed = min(allowed, max(int(row % p.Tq) + p.q_offset + 1, 0));
        limit = uint(allowed);
    }

    float m = NEG_INF;
    for (uint j = ROW_LANE; j < limit; j += ROW_LANES)
        m = max(m, LOAD_ELEMENT(X_F16, x32, x16, base + j));
    m = row_max(m);

    float s = 0.0;
    if (m != NEG_INF) {
        for (uint j = ROW_LANE; j < limit; j += ROW_LANES) {
            float e = exp((LOAD_ELEMENT(X_F16, x32, x16, base + j) - m) * p.scale);
            y[base + j] = e;
            s += e;
        }
    } else {
        limit = 0;  // nothing allowed: the whole row is zeros
    }
    s = row_sum(s);

    if (!row_valid)
        return;
    float inv = 1.0 / s;
    for (uint j = ROW_LANE; j < limit; j += ROW_LANES)
        y[base + j] *= inv;
    for (uint j = limit + ROW_LANE; j < p.Tk; j += ROW_LANES)
        y[base + j] = 0.0;
}
