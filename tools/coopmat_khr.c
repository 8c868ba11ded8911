/* Rewrites a SPIR-V module written against SPV_NV_cooperative_matrix into the
 * same module against SPV_KHR_cooperative_matrix, the extension AMD, Intel
 * and (beside the NV one) NVIDIA drivers take. Debian 12's glslang (12.0)
 * compiles only GL_NV_cooperative_matrix; the two extensions differ in little
 * more than spelling, so the build compiles the NV form and this tool makes
 * the KHR one from it, instruction for instruction:
 *
 *   capability CooperativeMatrixNV          -> CooperativeMatrixKHR
 *   OpExtension "SPV_NV_cooperative_matrix" -> "SPV_KHR_cooperative_matrix"
 *   OpTypeCooperativeMatrixNV  T C S R N    -> OpTypeCooperativeMatrixKHR T C S R N Use
 *   OpCooperativeMatrixLoadNV  T r P Stride ColumnMajor [mem]
 *                                           -> OpCooperativeMatrixLoadKHR T r P Layout Stride [mem]
 *   OpCooperativeMatrixStoreNV P O Stride ColumnMajor [mem]
 *                                           -> OpCooperativeMatrixStoreKHR P O Layout Stride [mem]
 *   OpCooperativeMatrixMulAddNV T r A B C   -> OpCooperativeMatrixMulAddKHR T r A B C
 *   OpCooperativeMatrixLengthNV T r M       -> OpCooperativeMatrixLengthKHR T r M
 *
 * A matrix's length as OpSpecConstantOp (glslang's form where the dimensions
 * are specialization constants) is refused: NV allows it there, KHR does not.
 *
 * A KHR matrix type names its use (A, B or accumulator), which NV leaves to
 * the product: each NV type takes the use its values have as a product's
 * operands (a type used as both A and B is refused, as is a conversion from
 * one use to another, which SPV_KHR_cooperative_matrix does not have; types
 * no product takes are accumulators). Use and layout are constant ids: three
 * 32-bit constants (0, 1, 2) are added before the first matrix type. NV's
 * ColumnMajor must be OpConstantTrue or OpConstantFalse.
 *
 *   vkattn-coopmat-khr IN.spv OUT.spv            NV -> KHR
 *   vkattn-coopmat-khr --bf16 IN.spv OUT.spv     NV -> KHR, the f16 A and B
 *       operands bf16 (SPV_KHR_bfloat16: OpTypeFloat 16 BFloat16KHR, its two
 *       capabilities and the extension): a kernel whose packed arrays hold
 *       bf16 bits where it is specialized so (attention_coopmat.comp's
 *       BF16_MATRICES). bf16 has no arithmetic, so an operand made by anything
 *       but a load (or OpPhi, OpCopyObject, OpUndef) is refused.
 *   vkattn-coopmat-khr --reverse IN.spv OUT.spv  KHR -> NV (for the test that
 *       checks a round trip gives back the module spirv-val accepted)
 *
 * Exit status 0, or 1 with a message naming the instruction. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_EXTENSION = 10, OP_CAPABILITY = 17, OP_TYPE_INT = 21, OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42, OP_CONSTANT = 43, OP_NAME = 5, OP_MEMBER_NAME = 6, OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72, OP_FCONVERT = 115, OP_SPEC_CONSTANT_OP = 52, OP_TYPE_FLOAT = 22,
    OP_UNDEF = 1, OP_LOAD = 61, OP_COPY_OBJECT = 83, OP_PHI = 245,
    CAP_BFLOAT16_TYPE = 5116, CAP_BFLOAT16_COOPMAT = 5118, FP_ENCODING_BFLOAT16 = 0,
    OP_TYPE_KHR = 4456, OP_LOAD_KHR, OP_STORE_KHR, OP_MULADD_KHR, OP_LENGTH_KHR,
    OP_TYPE_NV = 5358, OP_LOAD_NV, OP_STORE_NV, OP_MULADD_NV, OP_LENGTH_NV,
    CAP_NV = 5357, CAP_KHR = 6022,
};
enum { USE_A = 0, USE_B = 1, USE_ACC = 2, USE_NONE = 3 };
enum { ROW_MAJOR = 0, COLUMN_MAJOR = 1 };

typedef struct module {
    uint32_t *w;
    size_t n;
} module;

typedef struct writer {
    uint32_t *w;
    size_t n, cap;
} writer;

static int fail(const char *fmt, size_t at)
{
    fprintf(stderr, "vkattn-coopmat-khr: ");
    fprintf(stderr, fmt, at);
    fprintf(stderr, "\n");
    return 1;
}

static bool emit(writer *o, const uint32_t *words, size_t count)
{
    if (o->n + count > o->cap) {
        size_t cap = (o->n + count) * 2;
        uint32_t *w = realloc(o->w, cap * sizeof *w);
        if (!w)
            return false;
        o->w = w;
        o->cap = cap;
    }
    memcpy(o->w + o->n, words, count * sizeof *words);
    o->n += count;
    return true;
}

static bool read_module(const char *path, module *m)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    m->n = bytes > 0 ? (size_t)bytes / 4 : 0;
    m->w = m->n ? malloc(m->n * 4) : NULL;
    bool ok = m->w && bytes % 4 == 0 && fread(m->w, 4, m->n, f) == m->n && m->n >= 5 &&
              m->w[0] == 0x07230203u;
    fclose(f);
    return ok;
}

/* The string operand of an OpExtension at word i, if it is `name`. */
static bool extension_is(const module *m, size_t i, const char *name)
{
    size_t len = strlen(name), words = (m->w[i] >> 16) - 1;
    return (m->w[i] & 0xffff) == OP_EXTENSION && words * 4 > len &&
           memcmp(&m->w[i + 1], name, len + 1) == 0;
}

static bool emit_extension(writer *o, const char *name)
{
    uint32_t words[16] = {0};
    size_t len = strlen(name), count = len / 4 + 1;
    memcpy(&words[1], name, len);
    words[0] = (uint32_t)((count + 1) << 16) | OP_EXTENSION;
    return emit(o, words, count + 1);
}

/* Which ids are the matrix types (`op`), and each matrix-typed value's type:
 * every instruction whose first operand is a matrix type has it as its
 * result type (debug names and decorations aside). */
typedef struct analysis {
    uint32_t bound;
    uint8_t *use;        /* per id: USE_* of a matrix type, USE_NONE otherwise */
    bool *is_matrix;     /* per id: a matrix type */
    uint32_t *type_of;   /* per id: the matrix type of a value, 0 otherwise */
    uint32_t *uint_value; /* per id: 1 + the value of a 32-bit unsigned constant, 0 otherwise */
    uint32_t bool_true, bool_false, uint_type;
    uint32_t half_type;  /* OpTypeFloat 16 (IEEE), 0 if none */
} analysis;

static void analysis_free(analysis *a)
{
    free(a->use);
    free(a->is_matrix);
    free(a->type_of);
    free(a->uint_value);
}

static bool names_target(uint32_t op)
{
    return op == OP_NAME || op == OP_MEMBER_NAME || op == OP_DECORATE || op == OP_MEMBER_DECORATE;
}

static int set_use(analysis *a, uint32_t type, uint8_t use, size_t at)
{
    if (type >= a->bound || !a->is_matrix[type])
        return fail("word %zu: a product's operand is not of a matrix type", at);
    if (a->use[type] != USE_NONE && a->use[type] != use)
        return fail("word %zu: a matrix type is taken as two of A, B and the accumulator", at);
    a->use[type] = use;
    return 0;
}

static int analyze(const module *m, uint32_t type_op, uint32_t muladd_op, analysis *a)
{
    a->bound = m->w[3];
    a->use = malloc(a->bound);
    a->is_matrix = calloc(a->bound, sizeof *a->is_matrix);
    a->type_of = calloc(a->bound, sizeof *a->type_of);
    a->uint_value = calloc(a->bound, sizeof *a->uint_value);
    if (!a->use || !a->is_matrix || !a->type_of || !a->uint_value)
        return fail("no memory for %zu ids", a->bound);
    memset(a->use, USE_NONE, a->bound);
    for (size_t i = 5; i < m->n;) {
        uint32_t op = m->w[i] & 0xffff, count = m->w[i] >> 16;
        if (count == 0 || i + count > m->n)
            return fail("word %zu: a malformed instruction", i);
        uint32_t w1 = count > 1 ? m->w[i + 1] : 0, w2 = count > 2 ? m->w[i + 2] : 0;
        if (op == type_op && w1 < a->bound)
            a->is_matrix[w1] = true;
        else if (op == OP_CONSTANT_TRUE && w2 < a->bound)
            a->bool_true = w2;
        else if (op == OP_CONSTANT_FALSE && w2 < a->bound)
            a->bool_false = w2;
        else if (op == OP_TYPE_INT && count == 4 && m->w[i + 2] == 32 && m->w[i + 3] == 0)
            a->uint_type = w1;
        else if (op == OP_TYPE_FLOAT && count == 3 && m->w[i + 2] == 16)
            a->half_type = w1;
        else if (op == OP_CONSTANT && count == 4 && w1 == a->uint_type && a->uint_type &&
                 w2 < a->bound)
            a->uint_value[w2] = m->w[i + 3] + 1;
        bool typed = op != type_op && !names_target(op) && count > 2;
        if (typed && w1 < a->bound && a->is_matrix[w1] && w2 < a->bound)
            a->type_of[w2] = w1;
        if (op == muladd_op) {
            if (count < 6)
                return fail("word %zu: a product with too few operands", i);
            uint32_t ops[3] = {m->w[i + 3], m->w[i + 4], m->w[i + 5]};
            for (int k = 0; k < 3; k++)
                if (ops[k] >= a->bound || !a->type_of[ops[k]])
                    return fail("word %zu: a product's operand of unknown type", i);
            int r = set_use(a, w1, USE_ACC, i);
            r = r ? r : set_use(a, a->type_of[ops[0]], USE_A, i);
            r = r ? r : set_use(a, a->type_of[ops[1]], USE_B, i);
            r = r ? r : set_use(a, a->type_of[ops[2]], USE_ACC, i);
            if (r)
                return r;
        }
        i += count;
    }
    for (uint32_t id = 0; id < a->bound; id++)
        if (a->is_matrix[id] && a->use[id] == USE_NONE)
            a->use[id] = USE_ACC;
    /* A conversion keeps its use in SPV_KHR_cooperative_matrix. */
    for (size_t i = 5; i < m->n; i += m->w[i] >> 16) {
        uint32_t op = m->w[i] & 0xffff, count = m->w[i] >> 16;
        uint32_t to = count == 4 ? m->w[i + 1] : 0, from = count == 4 ? m->w[i + 3] : 0;
        if (op == OP_FCONVERT && to < a->bound && a->is_matrix[to] && from < a->bound &&
            a->type_of[from] && a->use[a->type_of[from]] != a->use[to])
            return fail("word %zu: a conversion between matrix uses (no such thing in "
                        "SPV_KHR_cooperative_matrix)", i);
    }
    return 0;
}

/* One direction of the rewrite: the opcodes, capability and extension it
 * reads and the ones it writes; bf16: A and B operands of f16 made bf16. */
typedef struct direction {
    bool to_khr, bf16;
    uint32_t from_type, from_load, from_store, from_muladd, from_length, from_cap;
    uint32_t to_type, to_load, to_store, to_muladd, to_length, to_cap;
    const char *from_extension, *to_extension;
} direction;

static const direction nv_to_khr = {
    true, false, OP_TYPE_NV, OP_LOAD_NV, OP_STORE_NV, OP_MULADD_NV, OP_LENGTH_NV, CAP_NV,
    OP_TYPE_KHR, OP_LOAD_KHR, OP_STORE_KHR, OP_MULADD_KHR, OP_LENGTH_KHR, CAP_KHR,
    "SPV_NV_cooperative_matrix", "SPV_KHR_cooperative_matrix",
};
/* The inverse, for the round-trip test: KHR types lose their use, layouts
 * become the module's boolean constants again. The added constants stay. */
static const direction nv_to_khr_bf16 = {
    true, true, OP_TYPE_NV, OP_LOAD_NV, OP_STORE_NV, OP_MULADD_NV, OP_LENGTH_NV, CAP_NV,
    OP_TYPE_KHR, OP_LOAD_KHR, OP_STORE_KHR, OP_MULADD_KHR, OP_LENGTH_KHR, CAP_KHR,
    "SPV_NV_cooperative_matrix", "SPV_KHR_cooperative_matrix",
};
static const direction khr_to_nv = {
    false, false, OP_TYPE_KHR, OP_LOAD_KHR, OP_STORE_KHR, OP_MULADD_KHR, OP_LENGTH_KHR, CAP_KHR,
    OP_TYPE_NV, OP_LOAD_NV, OP_STORE_NV, OP_MULADD_NV, OP_LENGTH_NV, CAP_NV,
    "SPV_KHR_cooperative_matrix", "SPV_NV_cooperative_matrix",
};

/* A load's or store's operands from `in` into `w`: NV has Stride then
 * ColumnMajor (a boolean constant) at `at`, KHR MemoryLayout (an unsigned
 * constant, `constant` holding the ids of 0 and 1) then Stride. */
static int move_layout(const direction *d, const analysis *a, const uint32_t constant[2],
                       const uint32_t *in, uint32_t count, size_t at, uint32_t *w, size_t i)
{
    if (count < at + 2 || count > 16)
        return fail("word %zu: a load or store of unexpected length", i);
    memcpy(w, in, count * sizeof *w);
    if (d->to_khr) {
        uint32_t major = in[at + 1];
        if (major != a->bool_true && major != a->bool_false)
            return fail("word %zu: ColumnMajor is not OpConstantTrue or OpConstantFalse", i);
        w[at] = constant[major == a->bool_true ? COLUMN_MAJOR : ROW_MAJOR];
        w[at + 1] = in[at];
        return 0;
    }
    uint32_t value = in[at] < a->bound ? a->uint_value[in[at]] : 0;
    if (value != 1 + ROW_MAJOR && value != 1 + COLUMN_MAJOR)
        return fail("word %zu: a layout that is not the constant 0 or 1", i);
    uint32_t major = value == 1 + COLUMN_MAJOR ? a->bool_true : a->bool_false;
    if (!major)
        return fail("word %zu: no OpConstantTrue or OpConstantFalse for the layout", i);
    w[at] = in[at + 1];
    w[at + 1] = major;
    return 0;
}

/* With d->bf16: whether the matrix type `type` becomes a bf16 operand's. */
static bool bf16_operand(const direction *d, const analysis *a, const module *m, uint32_t type)
{
    if (!d->bf16 || type >= a->bound || !a->is_matrix[type] || a->use[type] == USE_ACC)
        return false;
    for (size_t i = 5; i < m->n; i += m->w[i] >> 16)
        if ((m->w[i] & 0xffff) == d->from_type && m->w[i + 1] == type)
            return a->half_type && m->w[i + 2] == a->half_type;
    return false;
}

static int rewrite(const module *m, writer *o, const direction *d)
{
    analysis a = {0};
    int r = analyze(m, d->from_type, d->from_muladd, &a);
    uint32_t header[5];
    memcpy(header, m->w, sizeof header);
    /* NV to KHR: three new unsigned constants 0, 1, 2 (uses and layouts),
     * and with bf16 the bf16 type. */
    uint32_t constant[3] = {header[3], header[3] + 1, header[3] + 2}, bf16_type = header[3] + 3;
    if (d->to_khr)
        header[3] += d->bf16 ? 4 : 3;
    if (!r && d->bf16 && !a.half_type)
        r = fail("word %zu: --bf16 on a module without a 16-bit float type", 5);
    bool ok = !r && emit(o, header, 5), constants_written = !d->to_khr, uint_declared = false;
    for (size_t i = 5; ok && !r && i < m->n; i += m->w[i] >> 16) {
        const uint32_t *in = &m->w[i];
        uint32_t op = in[0] & 0xffff, count = in[0] >> 16, w[16];
        uint_declared = uint_declared || (op == OP_TYPE_INT && count > 1 && in[1] == a.uint_type);
        if (d->bf16 && count > 2 && !names_target(op) && op != d->from_type &&
            bf16_operand(d, &a, m, in[1]) && op != OP_LOAD && op != d->from_load &&
            op != OP_PHI && op != OP_COPY_OBJECT && op != OP_UNDEF) {
            r = fail("word %zu: a bf16 operand made by something other than a load (bf16 "
                     "has no arithmetic, conversions or constants of its own)", i);
        } else if (op == OP_CAPABILITY && in[1] == d->from_cap) {
            uint32_t cap[6] = {2u << 16 | OP_CAPABILITY, d->to_cap,
                               2u << 16 | OP_CAPABILITY, CAP_BFLOAT16_TYPE,
                               2u << 16 | OP_CAPABILITY, CAP_BFLOAT16_COOPMAT};
            ok = emit(o, cap, d->bf16 ? 6 : 2);
        } else if (extension_is(m, i, d->from_extension)) {
            ok = emit_extension(o, d->to_extension) &&
                 (!d->bf16 || emit_extension(o, "SPV_KHR_bfloat16"));
        } else if (op == d->from_type && count == (d->to_khr ? 6u : 7u)) {
            if (!constants_written) {
                if (!uint_declared)
                    r = fail("word %zu: no 32-bit unsigned type before the matrix types", i);
                for (uint32_t v = 0; !r && ok && v < 3; v++) {
                    uint32_t c[4] = {4u << 16 | OP_CONSTANT, a.uint_type, constant[v], v};
                    ok = emit(o, c, 4);
                }
                uint32_t bf16[4] = {4u << 16 | OP_TYPE_FLOAT, bf16_type, 16, FP_ENCODING_BFLOAT16};
                ok = ok && (!d->bf16 || emit(o, bf16, 4));
                constants_written = true;
            }
            uint32_t component = bf16_operand(d, &a, m, in[1]) ? bf16_type : in[2];
            uint32_t t[7] = {(d->to_khr ? 7u : 6u) << 16 | d->to_type, in[1], component, in[3],
                             in[4], in[5], constant[a.use[in[1]]]};
            ok = ok && emit(o, t, d->to_khr ? 7 : 6);
        } else if (op == d->from_load || op == d->from_store) {
            /* Load: T r P ...; store: P O ... */
            r = move_layout(d, &a, constant, in, count, op == d->from_load ? 4 : 3, w, i);
            w[0] = count << 16 | (op == d->from_load ? d->to_load : d->to_store);
            ok = r || emit(o, w, count);
        } else if ((op == d->from_muladd || op == d->from_length) && count <= 16) {
            memcpy(w, in, count * sizeof *w);
            w[0] = count << 16 | (op == d->from_muladd ? d->to_muladd : d->to_length);
            ok = emit(o, w, count);
        } else if (op == OP_SPEC_CONSTANT_OP && count == 5 && in[3] == d->from_length) {
            /* glslang's form of a matrix's length where its dimensions are
             * specialization constants. SPV_NV_cooperative_matrix adds the
             * length to OpSpecConstantOp's opcodes; SPV_KHR_cooperative_matrix
             * does not, and Mesa's SPIR-V reader, which evaluates every
             * constant of a module, fails on it: the shader must not ask. */
            r = fail("word %zu: a matrix's length as a specialization constant, which "
                     "SPV_KHR_cooperative_matrix does not allow (build without .length())", i);
        } else if (op == OP_SPEC_CONSTANT_OP && count > 3 &&
                   (in[3] == d->from_type || in[3] == d->from_load || in[3] == d->from_store ||
                    in[3] == d->from_muladd || in[3] == d->from_length)) {
            r = fail("word %zu: a specialization-constant cooperative-matrix operation of "
                     "unexpected form", i);
        } else if (op == d->from_type || op == d->from_muladd || op == d->from_length) {
            r = fail("word %zu: a cooperative-matrix instruction of unexpected length", i);
        } else {
            ok = emit(o, in, count);
        }
    }
    if (!r && !ok)
        r = fail("no memory for %zu words", m->n);
    analysis_free(&a);
    return r;
}

int main(int argc, char **argv)
{
    bool reverse = argc == 4 && strcmp(argv[1], "--reverse") == 0;
    bool bf16 = argc == 4 && strcmp(argv[1], "--bf16") == 0;
    if (argc != 3 && !reverse && !bf16) {
        fprintf(stderr, "usage: vkattn-coopmat-khr [--reverse | --bf16] IN.spv OUT.spv\n");
        return 2;
    }
    const char *in = argv[argc - 2], *out = argv[argc - 1];
    module m = {0};
    if (!read_module(in, &m)) {
        fprintf(stderr, "vkattn-coopmat-khr: %s: not a readable SPIR-V module\n", in);
        return 1;
    }
    writer o = {0};
    int r = rewrite(&m, &o, reverse ? &khr_to_nv : bf16 ? &nv_to_khr_bf16 : &nv_to_khr);
    free(m.w);
    if (r == 0) {
        FILE *f = fopen(out, "wb");
        bool written = f && fwrite(o.w, 4, o.n, f) == o.n;
        if (f && fclose(f) != 0)
            written = false;
        if (!written) {
            fprintf(stderr, "vkattn-coopmat-khr: %s: cannot write\n", out);
            remove(out); /* nothing half-written for the build to embed */
            r = 1;
        }
    }
    free(o.w);
    return r;
}
