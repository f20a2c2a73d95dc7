/* tests/t_emit.c: gr_fn_emit_c (SEMANTICS.md §20.1).

   suite_emit (in every run of the test binary): the errors (TYPE, SHAPE, VALUE: NULL out and
   example, a bad name, a user's op, a loop), the file's form (its three includes, NAME_WORK_BYTES,
   the opening comment, constants bit for bit as hex floats, no allocator), out of memory.

   The row-driven check (`make test-emit`: the test binary run with GT_EMIT_OUT=<dir>): every row's
   values cases run with every gr_call going through gt_call (tests/harness.h), which first emits
   the function for the call's inputs; the emitted functions, with the inputs and gr_call's outputs
   as hex-float arrays, go into ONE file, <dir>/cases.c, whose main calls each and compares its
   outputs with gr_call's bit for bit (NaN matching NaN). A row whose cases do not all emit must be
   in gt_em_not_yet below, and a row listed there must not emit: the list only shrinks. <dir>/w2.c
   and <dir>/grad.c, single emitted files (the W2 workload's cost and gradient; a gradient through
   broadcasting and shapes), are what make test-emit compiles with -ffreestanding and for a
   Cortex-M4. */
#include "forward.h"
#include "ops.h"
#include "t_emit_work.h"

/* the rows whose cases do not all emit yet (their rules fail as "not emitted yet"); keep it sorted
   by the table's order and remove a row once it emits */
static const char *const gt_em_not_yet[] = {
    NULL
};

/* ---- the recorder: gt_call emits before it calls --------------------------------------------- */

#define GT_EM_PER_TEST 40                /* calls of each of a row's cases emitted: the first 12, then every 5th */

typedef struct gt_em_rec {
    int on;
    FILE *body, *table;                  /* cases.c's cases and its table, written at the end */
    char **kern;                         /* the distinct kernel blocks, in order of first use */
    int n_kern, cap_kern;
    const char *row, *test;
    int n_case, row_seen, row_calls, row_emitted, row_failed, row_other;   /* other: failed, not as "not emitted yet" */
    int row_fixed, n_fixed;              /* refused as shapes depending on the data (a while loop's rows) */
    int test_seen, test_calls;           /* the same, of the case at work (gt_em_test) */
    char row_msg[300];
    long max_work;
} gt_em_rec;
static gt_em_rec gt_em;

/* the whole of a stream, read back from its start (malloc'd, NUL-terminated) */
static char *gt_em_slurp(FILE *fp, size_t *len) {
    long n;
    char *s;
    fflush(fp);
    n = ftell(fp);
    rewind(fp);
    s = (char *)malloc((size_t)n + 1);
    if (!s) return NULL;
    *len = fread(s, 1, (size_t)n, fp);
    s[*len] = 0;
    return s;
}

/* gr_fn_emit_c of f for these inputs into a string; its status */
static gr_status gt_em_text(gr_fn *f, const gr_array *const *in, const char *name, char **text) {
    FILE *fp = tmpfile();
    gr_emit_opts o;
    gr_status st;
    size_t len;
    *text = NULL;
    if (!fp) return GR_ERR_VALUE;
    o.name = name;
    st = gr_fn_emit_c(f, in, fp, &o);
    if (st == GR_OK) *text = gt_em_slurp(fp, &len);
    fclose(fp);
    return st;
}

/* element k of a as a C constant of its dtype */
static void gt_em_value(FILE *out, const gr_array *a, int64_t k) {
    double v = a->dtype == GR_F32 ? (double)((const float *)a->data)[k] : a->dtype == GR_F64 ? ((const double *)a->data)[k] : 0;
    if (a->dtype == GR_I64) {
        int64_t n = ((const int64_t *)a->data)[k];
        if (n == INT64_MIN) fprintf(out, "(-INT64_C(9223372036854775807) - 1)");
        else fprintf(out, "INT64_C(%lld)", (long long)n);
    } else if (a->dtype == GR_BOOL) fprintf(out, "%u", (unsigned)((const uint8_t *)a->data)[k]);
    else if (v != v) fprintf(out, "NAN");
    else if (v - v != 0) fprintf(out, "%sINFINITY", v < 0 ? "-" : "");
    else fprintf(out, "%a%s", v, a->dtype == GR_F32 ? "f" : "");
}
static const char *gt_em_ctype(gr_dtype dt) {
    return dt == GR_F64 ? "double" : dt == GR_F32 ? "float" : dt == GR_I64 ? "int64_t" : "uint8_t";
}
/* static [const] T name[] = { values } */
static void gt_em_array(FILE *out, const char *qual, const char *name, const gr_array *a, int values) {
    int64_t k;
    fprintf(out, "static %s%s %s[%lld]", qual, gt_em_ctype(a->dtype), name, (long long)(a->size ? a->size : 1));
    if (!values) { fprintf(out, ";\n"); return; }
    fprintf(out, " = {");
    for (k = 0; k < a->size; k++) { fprintf(out, "%s", !k ? "\n    " : k % 8 ? ", " : ",\n    "); gt_em_value(out, a, k); }
    fprintf(out, "%s};\n", a->size ? "\n" : " 0 ");
}

/* the kernel blocks of an emitted text (between its WORK_BYTES line and its first static array
   or its function), each kept once; returns where the rest starts */
static const char *gt_em_kernels(const char *text, const char *name) {
    char def[96], fn[96], arr[96];
    const char *p, *end, *q;
    snprintf(def, sizeof def, "#define %s_WORK_BYTES", name);
    snprintf(fn, sizeof fn, "\nint %s(", name);
    snprintf(arr, sizeof arr, " %s_", name);
    p = strstr(text, def);
    if (!p) return text;
    p = strchr(p, '\n') + 1;
    end = strstr(p, fn);
    for (q = p; q && q < end; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : NULL) {
        const char *eol = strchr(q, '\n');
        if (!strncmp(q, "static ", 7) && eol && strstr(q, arr) && strstr(q, arr) < eol) { end = q; break; }
    }
    while (p < end) {                    /* blocks end at a blank line */
        const char *b = strstr(p, "\n\n");
        size_t n;
        int i, seen = 0;
        if (!b || b > end) b = end;
        n = (size_t)(b - p);
        while (n && (p[0] == '\n')) { p++; n--; }
        for (i = 0; n && i < gt_em.n_kern; i++) if (strlen(gt_em.kern[i]) == n && !strncmp(gt_em.kern[i], p, n)) seen = 1;
        if (n && !seen) {
            if (gt_em.n_kern == gt_em.cap_kern) {
                gt_em.cap_kern = gt_em.cap_kern ? 2 * gt_em.cap_kern : 32;
                gt_em.kern = (char **)realloc(gt_em.kern, sizeof(char *) * (size_t)gt_em.cap_kern);
            }
            gt_em.kern[gt_em.n_kern] = (char *)malloc(n + 1);
            memcpy(gt_em.kern[gt_em.n_kern], p, n);
            gt_em.kern[gt_em.n_kern++][n] = 0;
        }
        p = b + (b < end ? 2 : 0);
    }
    return end;
}

/* one emitted call: its function, inputs, gr_call's outputs, and its entry in the table; rc: the
   status the emitted function must return (not 0: its outputs are not compared) */
static void gt_em_record(gr_fn *f, const gr_array *const *in, const gr_array **out, const char *text, const char *name, int rc) {
    int n_in = 0, n_out = 0, i;
    long work = 0;
    const char *w = strstr(text, "\n#define ");
    FILE *b = gt_em.body;
    char an[64];
    (void)f;
    if (w) w = strstr(w, "_WORK_BYTES ");
    if (w) work = atol(w + 12);
    if (work > gt_em.max_work) gt_em.max_work = work;
    fprintf(b, "\n/* ---- %s: %s: %s */\n%s", name, gt_em.row, gt_em.test, gt_em_kernels(text, name));
    {   /* the function's inputs and outputs, from its opening comment */
        char key[32];
        for (;;) { snprintf(key, sizeof key, "inputs[%d]:", n_in); if (!strstr(text, key)) break; n_in++; }
        for (;;) { snprintf(key, sizeof key, "outputs[%d]:", n_out); if (!strstr(text, key)) break; n_out++; }
    }
    for (i = 0; i < n_in; i++) { snprintf(an, sizeof an, "%s_i%d", name, i); gt_em_array(b, "const ", an, in[i], 1); }
    for (i = 0; i < n_out; i++) {
        snprintf(an, sizeof an, "%s_w%d", name, i);
        gt_em_array(b, "const ", an, out[i], 1);
        snprintf(an, sizeof an, "%s_g%d", name, i);
        gt_em_array(b, "", an, out[i], 0);
    }
    fprintf(b, "static const void *const %s_in[] = {", name);
    for (i = 0; i < n_in; i++) fprintf(b, " %s_i%d,", name, i);
    fprintf(b, " 0 };\nstatic void *const %s_out[] = {", name);
    for (i = 0; i < n_out; i++) fprintf(b, " %s_g%d,", name, i);
    fprintf(b, " 0 };\nstatic const void *const %s_want[] = {", name);
    for (i = 0; i < n_out; i++) fprintf(b, " %s_w%d,", name, i);
    fprintf(b, " 0 };\nstatic const size_t %s_bytes[] = {", name);
    for (i = 0; i < n_out; i++) fprintf(b, " %lu,", (unsigned long)((size_t)out[i]->size * (out[i]->dtype == GR_F32 ? 4u : out[i]->dtype == GR_BOOL ? 1u : 8u)));
    fprintf(b, " 0 };\nstatic const int %s_dt[] = {", name);
    for (i = 0; i < n_out; i++) fprintf(b, " %d,", (int)out[i]->dtype);
    fprintf(b, " 0 };\nstatic const size_t %s_ibytes[] = {", name);
    for (i = 0; i < n_in; i++) fprintf(b, " %lu,", (unsigned long)((size_t)in[i]->size * (in[i]->dtype == GR_F32 ? 4u : in[i]->dtype == GR_BOOL ? 1u : 8u)));
    fprintf(b, " 0 };\nstatic const int %s_idt[] = {", name);
    for (i = 0; i < n_in; i++) fprintf(b, " %d,", (int)in[i]->dtype);
    fprintf(b, " 0 };\n");
    fprintf(gt_em.table, "    { \"%s\", \"%s\", %s, %d, %s_in, %s_out, %s_want, %s_bytes, %s_dt, %d, %d, %s_ibytes, %s_idt, %d },\n", gt_em.row,
            gt_em.test, name, n_out, name, name, name, name, name, rc, n_in, name, name, strstr(text, "\n   updates ") != NULL);
}

#undef gr_call
/* every gr_call of the test binary (tests/harness.h): when recording, the function is emitted for
   the call's inputs first (before the call applies f's updates to its shared variables) */
gr_status gt_call(gr_fn *f, const gr_array *const *in, const gr_array **out) {
    char *text = NULL, name[32], msg[300];
    gr_status est = GR_OK, st;
    int take = gt_em.on && f && gt_em.test_calls < GT_EM_PER_TEST && (gt_em.test_seen < 12 || gt_em.test_seen % 5 == 0);
    if (take) {
        snprintf(name, sizeof name, "c%d", gt_em.n_case);
        est = gt_em_text(f, in, name, &text);
        snprintf(msg, sizeof msg, "%s", gr_fn_message(f));
    }
    st = gr_call(f, in, out);
    if (gt_em.on && st == GR_OK) { gt_em.row_seen++; gt_em.test_seen++; }
    if (take && st == GR_OK) {
        gt_em.row_calls++;
        gt_em.test_calls++;
        if (est == GR_OK && text) {
            gt_em_record(f, in, out, text, name, 0);
            gt_em.n_case++;
            gt_em.row_emitted++;
        } else if (est == GR_ERR_VALUE && strstr(msg, "depends on the data") && strstr(msg, "the emitted function has fixed shapes")) {
            gt_em.row_fixed++;           /* the API has fixed shapes: a while loop's rows, n_steps from an input */
            gt_em.n_fixed++;
        } else {
            int other = !strstr(msg, "not emitted yet");
            if (!gt_em.row_failed || (other && !gt_em.row_other))
                snprintf(gt_em.row_msg, sizeof gt_em.row_msg, "%.240s (%s)", msg, gr_status_string(est));
            gt_em.row_failed++;
            gt_em.row_other += other;
        }
    }
    free(text);
    return st;
}
#define gr_call gt_call

/* ---- the row-driven run (GT_EMIT_OUT) ---------------------------------------------------------- */

#define GT_EM_EW_DECL(name, ...) extern const gt_ew gt_ew_##name;
GR_ELEMWISE_OPS(GT_EM_EW_DECL)
#undef GT_EM_EW_DECL
#define GT_EM_ST_DECL(Name, ...) extern const gt_opcase gt_cases_##Name[];
GR_STRUCT_OPS(GT_EM_ST_DECL)
#undef GT_EM_ST_DECL
typedef struct gt_em_row { const char *name; const gt_opcase *cases; } gt_em_row;
#define GT_EM_ST_ROW(Name, ...) { #Name, gt_cases_##Name },
static const gt_em_row gt_em_st_rows[] = { GR_STRUCT_OPS(GT_EM_ST_ROW) { NULL, NULL } };
#undef GT_EM_ST_ROW
#define GT_EM_EW_ROW(name, ...) #name,
static const char *const gt_em_ew_rows[] = { GR_ELEMWISE_OPS(GT_EM_EW_ROW) NULL };
#undef GT_EM_EW_ROW

static const gte_row *gt_em_ew_now;
static void gt_em_ew_values(void) { gte_values(gt_em_ew_now); }

static int gt_em_listed(const char *row) {
    int i;
    for (i = 0; gt_em_not_yet[i]; i++) if (!strcmp(gt_em_not_yet[i], row)) return 1;
    return 0;
}

/* a row's verdict: every call of its cases emitted, or listed as not yet (and not emitting) */
static void gt_em_row_done(int *n_rows, int *n_listed) {
    int emits = gt_em.row_emitted > 0 && gt_em.row_failed == 0, listed = gt_em_listed(gt_em.row);
    char name[96];
    snprintf(name, sizeof name, "emit: row %s", gt_em.row);
    gt.test = name;
    if (listed) {
        CHECK_MSG(!emits, "row %s emits now (%d calls): remove it from gt_em_not_yet", gt_em.row, gt_em.row_emitted);
        (*n_listed)++;
    } else {
        CHECK_MSG(gt_em.row_calls > 0, "row %s: no call of its values cases", gt_em.row);
        CHECK_MSG(gt_em.row_failed == 0, "row %s: %d of %d calls did not emit: %s", gt_em.row, gt_em.row_failed, gt_em.row_calls,
                  gt_em.row_msg);
        (*n_rows)++;
    }
    gt.test = NULL;
    gt_em.row_seen = gt_em.row_calls = gt_em.row_emitted = gt_em.row_failed = gt_em.row_other = gt_em.row_fixed = 0;
    gt_em.test_seen = gt_em.test_calls = 0;
    gt_em.row_msg[0] = 0;
}

static void gt_em_rows(void) {
    int r, k, n_rows = 0, n_listed = 0;
    for (r = 0; gt_em_ew_rows[r]; r++) {
        const gte_row *row = gt_em_ew_now = gte_row_of(gt_em_ew_rows[r]);
        gt_em.row = row->name;
        gt_em.test = "values";
        gt_run1(row->name, gt_em_ew_values);
        for (k = 0; row->cases->more && row->cases->more[k].kind; k++)
            if (row->cases->more[k].kind == GT_K_VALUES) {
                gt_em.test = row->cases->more[k].name;
                gt_em.test_seen = gt_em.test_calls = 0;
                gt_run1(gt_em.test, row->cases->more[k].fn);
            }
        gt_em_row_done(&n_rows, &n_listed);
    }
    for (r = 0; gt_em_st_rows[r].name; r++) {
        const gt_opcase *c = gt_em_st_rows[r].cases;
        gt_em.row = gt_em_st_rows[r].name;
        for (k = 0; c[k].kind; k++)
            if (c[k].kind == GT_K_VALUES) {
                gt_em.test = c[k].name;
                gt_em.test_seen = gt_em.test_calls = 0;
                gt_run1(c[k].name, c[k].fn);
            }
        gt_em_row_done(&n_rows, &n_listed);
    }
    {   /* t_fuzz's random graphs: those of rows not emitted yet (dot products, loops, ...) may say so */
        extern const gt_case suite_fuzz[];
        char name[64];
        gt_em.row = "t_fuzz's random graphs";
        gt_em.test = "test_fuzz_random_graphs";
        gt_run(suite_fuzz);
        snprintf(name, sizeof name, "emit: %s", gt_em.row);
        gt.test = name;
        CHECK_MSG(gt_em.row_emitted >= 10, "%s: %d calls emitted", gt_em.row, gt_em.row_emitted);
        CHECK_MSG(gt_em.row_other == 0, "%s: %d calls did not emit: %s", gt_em.row, gt_em.row_other, gt_em.row_msg);
        gt.test = NULL;
        printf("emit: t_fuzz's random graphs: %d calls emitted, %d not (rows not emitted yet)\n", gt_em.row_emitted, gt_em.row_failed);
        gt_em.row_seen = gt_em.row_calls = gt_em.row_emitted = gt_em.row_failed = gt_em.row_other = 0;
        gt_em.test_seen = gt_em.test_calls = 0;
    }
    for (k = 0; gt_em_not_yet[k]; k++) {
        int found = 0;
        for (r = 0; gt_em_st_rows[r].name; r++) found |= !strcmp(gt_em_st_rows[r].name, gt_em_not_yet[k]);
        CHECK_MSG(found, "gt_em_not_yet names %s, which is no row", gt_em_not_yet[k]);
    }
    printf("emit: %d rows emit (%d calls recorded), %d rows listed as not emitted yet; %d calls refused as having shapes that depend "
           "on the data (while loops' rows, n_steps from an input)\n", n_rows, gt_em.n_case, n_listed, gt_em.n_fixed);
}

/* cases.c's main: each case called once, its outputs against gr_call's bit for bit (NaN matches NaN);
   then, if it updates no shared variable, once more for each input of an output's dtype and size, that output given the input's memory
   (a copy of it): an emitted function computed in place gives the same outputs (an output computed
   straight into outputs[j], src/emit.c's gr__em_direct, must not overwrite an input before reading it) */
static const char gt_em_main[] =
    "static double gt_work[GT_WORK / 8 + 1];\n"
    "static int gt_same(const void *got, const void *want, size_t bytes, int dt, size_t *at) {\n"
    "    size_t i, es = dt == 1 ? 4 : dt == 3 ? 1 : 8;\n"
    "    for (i = 0; i < bytes / es; i++) {\n"
    "        const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;\n"
    "        if (!memcmp(g, w, es)) continue;\n"
    "        if (dt == 0) { double a, b; memcpy(&a, g, 8); memcpy(&b, w, 8); if (a != a && b != b) continue; }\n"
    "        if (dt == 1) { float a, b; memcpy(&a, g, 4); memcpy(&b, w, 4); if (a != a && b != b) continue; }\n"
    "        *at = i;\n"
    "        return 0;\n"
    "    }\n"
    "    return 1;\n"
    "}\n"
    "static int gt_in_place(const gt_case_t *c, int ci, int j, int *n_place) {\n"
    "    const void *ins[64];\n"
    "    void *outs[64];\n"
    "    int i, k, ok = 1;\n"
    "    size_t at = 0;\n"
    "    if (c->n_in > 64 || c->n_out > 64 || c->updates) return 1;   /* (a second call would see the updated state) */\n"
    "    for (i = 0; ok && i < c->n_in; i++) {\n"
    "        void *alias;\n"
    "        if (c->ibytes[i] != c->bytes[j] || c->idt[i] != c->dt[j] || !c->bytes[j] || !(alias = malloc(c->bytes[j]))) continue;\n"
    "        memcpy(alias, c->in[i], c->bytes[j]);\n"
    "        for (k = 0; k < c->n_in; k++) ins[k] = k == i ? alias : c->in[k];\n"
    "        for (k = 0; k < c->n_out; k++) { outs[k] = k == j ? alias : c->out[k]; if (k != j) memset(outs[k], 0xA5, c->bytes[k]); }\n"
    "        ok = c->fn(ins, outs, gt_work) == 0;\n"
    "        for (k = 0; ok && k < c->n_out; k++) ok = gt_same(outs[k], c->want[k], c->bytes[k], c->dt[k], &at);\n"
    "        if (!ok) printf(\"FAIL emit %s: %s (case c%d): output %d given input %d's memory differs from gr_call's\\n\", c->row, c->test, ci, j, i);\n"
    "        free(alias);\n"
    "        ++*n_place;\n"
    "    }\n"
    "    return ok;\n"
    "}\n"
    "int main(void) {\n"
    "    int i, j, n = 0, failed = 0, n_place = 0;\n"
    "    for (i = 0; gt_cases[i].row; i++) {\n"
    "        const gt_case_t *c = &gt_cases[i];\n"
    "        int rc, ok = 1;\n"
    "        size_t at = 0;\n"
    "        for (j = 0; j < c->n_out; j++) memset(c->out[j], 0xA5, c->bytes[j]);\n"
    "        rc = c->fn(c->in, c->out, gt_work);\n"
    "        if (rc != c->rc) { printf(\"FAIL emit %s: %s (case %d): returned %d, not %d\\n\", c->row, c->test, i, rc, c->rc); ok = 0; }\n"
    "        for (j = 0; ok && rc == 0 && j < c->n_out; j++)\n"
    "            if (!gt_same(c->out[j], c->want[j], c->bytes[j], c->dt[j], &at)) {\n"
    "                printf(\"FAIL emit %s: %s (case c%d): output %d differs from gr_call's at element %lu\\n\", c->row, c->test, i, j, (unsigned long)at);\n"
    "                ok = 0;\n"
    "            }\n"
    "        for (j = 0; ok && rc == 0 && j < c->n_out; j++) ok = gt_in_place(c, i, j, &n_place);\n"
    "        failed += !ok;\n"
    "        n++;\n"
    "    }\n"
    "    printf(\"emit cases: %d passed, %d failed (each emitted function against gr_call, bit for bit; %d calls in place, an output over an input)\\n\", n - failed, failed, n_place);\n"
    "    return failed != 0;\n"
    "}\n";

/* <dir>/cases.c: the kernels, every case, the table, the main */
static int gt_em_write_cases(const char *dir) {
    char path[512], *body, *table;
    size_t nb, nt;
    FILE *out;
    int i;
    snprintf(path, sizeof path, "%s/cases.c", dir);
    out = fopen(path, "w");
    body = gt_em_slurp(gt_em.body, &nb);
    table = gt_em_slurp(gt_em.table, &nt);
    if (!out || !body || !table) { free(body); free(table); if (out) fclose(out); return 0; }
    fprintf(out, "/* generated by the test binary (GT_EMIT_OUT, tests/t_emit.c): every emitted case and gr_call's values */\n");
    fprintf(out, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n\n");
    for (i = 0; i < gt_em.n_kern; i++) fprintf(out, "%s\n\n", gt_em.kern[i]);
    fwrite(body, 1, nb, out);
    fprintf(out, "\ntypedef int (*gt_fn_t)(const void *const *, void *const *, void *);\n");
    fprintf(out, "typedef struct { const char *row, *test; gt_fn_t fn; int n_out; const void *const *in; void *const *out;\n"
                 "                 const void *const *want; const size_t *bytes; const int *dt; int rc; int n_in; const size_t *ibytes;\n"
                 "                 const int *idt; int updates; } gt_case_t;\n");
    fprintf(out, "static const gt_case_t gt_cases[] = {\n");
    fwrite(table, 1, nt, out);
    fprintf(out, "    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }\n};\n#define GT_WORK %ld\n%s", gt_em.max_work, gt_em_main);
    free(body);
    free(table);
    return fclose(out) == 0;
}

/* one emitted file on its own (for the freestanding, no-allocator and Cortex-M4 compiles) */
static void gt_em_standalone(const char *dir, const char *file, gr_fn *f, const gr_array *const *in, const char *name) {
    char path[512], *text = NULL;
    gr_status st = gt_em_text(f, in, name, &text);
    FILE *out;
    CHECK_MSG(st == GR_OK, "%s: %s", file, gr_fn_message(f));
    snprintf(path, sizeof path, "%s/%s", dir, file);
    out = text ? fopen(path, "w") : NULL;
    if (out) { fputs(text, out); fclose(out); }
    CHECK(out != NULL);
    free(text);
}

/* a function of broadcasting, a constant, a float32 input cast up, and a shared variable updated
   from its own old value: x (3, 4), c constant (4), s shared (4), h float32 (4);
   y = tanh(x c + s) * h, z = s - 1; s := 0.5 s + c */
static gr_fn *gt_em_sample(gr_graph *g, gr_array **arrays) {
    static const double cv[4] = { 0.5, -1.25, 2.0, 0.1 }, sv[4] = { 0.25, -0.5, 1e-3, 3.0 };
    int64_t s34[2] = { 3, 4 }, n4 = 4, i;
    gr_array *ca = gr_array_new(GR_F64, 1, &n4), *sa = gr_array_new(GR_F64, 1, &n4);
    gr_var *x, *c, *s, *h, *outs[2], *ins[2];
    gr_update up;
    gr_fn_opts o;
    gr_fn *f;
    for (i = 0; i < 4; i++) { gr_array_set(ca, i, cv[i]); gr_array_set(sa, i, sv[i]); }
    x = gr_tensor(g, GR_F64, 2, s34, "x");
    h = gr_vector(g, GR_F32, "h");
    c = gr_constant(g, ca);
    s = gr_shared(g, sa, "s");
    outs[0] = gr_mul(gr_tanh(gr_add(gr_mul(x, c), s)), gr_cast(h, GR_F64));
    outs[1] = gr_sub(s, gr_const(g, 1.0));
    up.shared = s;
    up.value = gr_add(gr_mul(s, gr_const(g, 0.5)), c);
    memset(&o, 0, sizeof o);
    o.updates = &up;
    o.n_updates = 1;
    ins[0] = x;
    ins[1] = h;
    f = gr_function(2, ins, 2, outs, &o);
    arrays[0] = gr_array_new(GR_F64, 2, s34);
    arrays[1] = gr_array_new(GR_F32, 1, &n4);
    for (i = 0; i < 12; i++) gr_array_set(arrays[0], i, sin(1.0 + (double)i));
    for (i = 0; i < 4; i++) gr_array_set(arrays[1], i, 0.5 + 0.25 * (double)i);
    gr_array_free(ca);
    gr_array_free(sa);
    return f;
}

/* W2 of bench/bench.c (n = 64): cost = sum(sin(x) exp(-x x) + log1p(x x) + tanh(x) x) and its
   gradient, one function; and a gradient through broadcasting: c = mean(sqr(tanh(X w + b) - t)) of
   X (5, 4), w (4), b (), t (5, 1), differentiated with respect to w, b and X */
static gr_fn *gt_em_w2(gr_graph *g, gr_array **x) {
    int64_t n = 64, i;
    gr_var *vx = gr_vector(g, GR_F64, "x"), *xx = gr_mul(vx, vx), *outs[2];
    gr_var *cost = gr_sum(gr_add(gr_add(gr_mul(gr_sin(vx), gr_exp(gr_neg(xx))), gr_log1p(xx)), gr_mul(gr_tanh(vx), vx)));
    outs[0] = cost;
    outs[1] = gr_grad1(cost, vx);
    *x = gr_array_new(GR_F64, 1, &n);
    for (i = 0; i < n; i++) gr_array_set(*x, i, 2.0 * sin(7.0 + 1.3 * (double)i));
    return gr_function(1, &vx, 2, outs, NULL);
}
static gr_fn *gt_em_grad(gr_graph *g, gr_array **arrays) {
    int64_t s54[2] = { 5, 4 }, s51[2] = { 5, 1 }, n4 = 4, i;
    gr_var *X = gr_tensor(g, GR_F64, 2, s54, "X"), *w = gr_tensor(g, GR_F64, 1, &n4, "w"), *b = gr_scalar(g, GR_F64, "b");
    gr_var *t = gr_tensor(g, GR_F64, 2, s51, "t"), *ins[4], *outs[4], *wrt[3];
    gr_var *c = gr_mean(gr_sqr(gr_sub(gr_tanh(gr_add(gr_mul(X, w), b)), t)));
    ins[0] = X; ins[1] = w; ins[2] = b; ins[3] = t;
    wrt[0] = w; wrt[1] = b; wrt[2] = X;
    outs[0] = c;
    if (gr_grad(c, 3, wrt, outs + 1, NULL) != GR_OK) return NULL;
    arrays[0] = gr_array_new(GR_F64, 2, s54);
    arrays[1] = gr_array_new(GR_F64, 1, &n4);
    arrays[2] = gr_array_scalar(GR_F64, 0.125);
    arrays[3] = gr_array_new(GR_F64, 2, s51);
    for (i = 0; i < 20; i++) gr_array_set(arrays[0], i, cos(0.7 * (double)i));
    for (i = 0; i < 4; i++) gr_array_set(arrays[1], i, 0.3 - 0.2 * (double)i);
    for (i = 0; i < 5; i++) gr_array_set(arrays[3], i, 0.1 * (double)i);
    return gr_function(4, ins, 4, outs, NULL);
}

/* Every row ops/vmath.c maps, in one fused group per dtype (float64, float32), of x (n) and s (one
   value broadcast): exp(x s), expm1 x, tanh x, log(x x + 0.5) (a multiply-add), log1p(x x), sin x and
   cos x (the pair sincos), sigmoid x, softplus x; and, last, float32 exp x cast to float64 (in the
   float32 group: a copy to a wider dtype reading a block buffer nothing reads after it). src/emit.c
   writes such a group blocked, calling the map kernels (gr__vm_<f>_map) block by block. */
enum { TE_VM_OUT = 9 };
static gr_fn *te_vm_fn(gr_graph *g) {
    gr_var *ins[4], *outs[2 * TE_VM_OUT + 1];
    int d;
    for (d = 0; d < 2; d++) {
        gr_dtype dt = d ? GR_F32 : GR_F64;
        gr_var *x = gr_vector(g, dt, d ? "x32" : "x"), *s = gr_scalar(g, dt, d ? "s32" : "s"), *xx = gr_mul(x, x);
        gr_var **o = outs + d * TE_VM_OUT;
        ins[2 * d] = x;
        ins[2 * d + 1] = s;
        o[0] = gr_exp(gr_mul(x, s)); o[1] = gr_expm1(x); o[2] = gr_tanh(x);
        o[3] = gr_log(gr_add(xx, gr_const(g, 0.5))); o[4] = gr_log1p(xx); o[5] = gr_sin(x);
        o[6] = gr_cos(x); o[7] = gr_sigmoid(x); o[8] = gr_softplus(x);
        if (d) outs[2 * TE_VM_OUT] = gr_cast(gr_exp(x), GR_F64);
    }
    return gr_function(4, ins, 2 * TE_VM_OUT + 1, outs, NULL);
}
/* x (n) in [-3, 3] and special points (NaN, +-inf, +-0, beyond exp's range, beyond sin's main
   range), float64 and float32; s = 0.75 */
static void te_vm_arrays(int64_t n, gr_array **a) {
    static const double special[] = { NAN, 800.0, -800.0, 1e7, INFINITY, -INFINITY, 0.0, -0.0, 700.5, -745.5 };
    int64_t i;
    int d;
    for (d = 0; d < 2; d++) {
        gr_dtype dt = d ? GR_F32 : GR_F64;
        a[2 * d] = gr_array_new(dt, 1, &n);
        a[2 * d + 1] = gr_array_scalar(dt, 0.75);
        for (i = 0; i < n; i++)
            gr_array_set(a[2 * d], i, i % 37 == 5 ? special[(i / 37) % 10] : 3.0 * sin(1.3 * (double)i + 0.2));
    }
}
/* output k of te_vm_fn at x (s), in long double from the C library's long double functions; the
   float operations before the function (x s, x x + 0.5, x x) rounded as the graph rounds them */
static long double te_vm_ref(int k, double x, double s, int f32) {
    double q = f32 ? (double)((float)x * (float)s) : x * s, xx = f32 ? (double)((float)x * (float)x) : x * x, arg;
    volatile double p = xx;              /* (no contraction of x x + 0.5) */
    arg = f32 ? (double)((float)p + 0.5f) : p + 0.5;
    switch (k) {
    case 0: return expl(q);
    case 1: return expm1l(x);
    case 2: return tanhl(x);
    case 3: return logl(arg);
    case 4: return log1pl(xx);
    case 5: return sinl(x);
    case 6: return cosl(x);
    case 7: return x >= 0 ? 1 / (1 + expl(-x)) : expl(x) / (1 + expl(x));
    default: return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x));
    }
}
/* gr_call's outputs (which make test-emit compares with the emitted file's bit for bit) against the
   reference: within 4 ulp (the README's bounds, "Math functions": 1-3 ulp in float64, 0.501 in float32;
   the C library's under GR_NO_VECTOR_EXTENSIONS) */
static void te_vm_check(const gr_array *const *in, const gr_array *const *out, int64_t n) {
    int64_t i;
    int d, k;
    for (d = 0; d < 2; d++)
        for (k = 0; k < TE_VM_OUT; k++)
            for (i = 0; i < n; i++) {
                double x = gr_array_get(in[2 * d], i), got = gr_array_get(out[d * TE_VM_OUT + k], i);
                long double want = te_vm_ref(k, x, gr_array_get(in[2 * d + 1], 0), d);
                double u = d ? gt_ulps(got, (long double)(float)want, 24, -125) : gt_ulps(got, want, 53, -1021);
                CHECK_MSG(u <= 4.0, "%s output %d at x = %.17g (n %ld): %.17g, want %.17Lg (%g ulp)", d ? "float32" : "float64",
                          k, x, (long)n, got, want, u);
            }
    for (i = 0; i < n; i++) {          /* float32 exp x as float64: a float32 value, within 4 ulp of it */
        double x = gr_array_get(in[2], i), got = gr_array_get(out[2 * TE_VM_OUT], i);
        CHECK(out[2 * TE_VM_OUT]->dtype == GR_F64);
        CHECK_MSG(got != got || (double)(float)got == got, "exp(x32) as float64: %.17g", got);
        CHECK_MSG(gt_ulps(got, (long double)(float)expl(x), 24, -125) <= 4.0, "exp(x32) as float64 at x = %.17g: %.17g", x, got);
    }
}

/* one sample: its file of its own, then three calls recorded as a row of its own */
static void gt_em_sample_run(const char *dir, const char *file, const char *row, gr_fn *f, gr_array *const *arrays) {
    const gr_array *out[4];
    int n_rows = 0, n_listed = 0, k;
    CHECK_MSG(f != NULL, "%s: not built", row);
    if (!f) return;
    gt_em_standalone(dir, file, f, (const gr_array *const *)arrays, "gr_sample");
    gt_em.row = row;
    gt_em.test = "calls 1-3";
    for (k = 0; k < 3; k++) CHECK_STATUS(gr_call(f, (const gr_array *const *)arrays, out), GR_OK);   /* each sees the last update */
    gt_em_row_done(&n_rows, &n_listed);
}

/* The second set of vector math rows, one fused group per dtype (float64, float32) of x (n), with
   p = x x + 0.5, q = x / 4 (exact), c = x x + 1: erf, erfc, exp2 x, log2 p, sinh, cosh, tan, arctan x,
   arcsin, arccos, arctanh q, arcsinh x, arccosh c, cbrt x, pow(p, x), arctan2(x, p); blocked, through
   their map kernels (the binary ones with both operands blocks) */
enum { TE_VM2_OUT = 16 };
static gr_fn *te_vm2_fn(gr_graph *g) {
    gr_var *ins[2], *outs[2 * TE_VM2_OUT];
    int d;
    for (d = 0; d < 2; d++) {
        gr_dtype dt = d ? GR_F32 : GR_F64;
        gr_var *x = gr_vector(g, dt, d ? "x32" : "x"), *xx = gr_mul(x, x), *p = gr_add(xx, gr_const(g, 0.5));
        gr_var *q = gr_mul(x, gr_const(g, 0.25)), *c = gr_add(xx, gr_const(g, 1.0));
        gr_var **o = outs + d * TE_VM2_OUT;
        ins[d] = x;
        o[0] = gr_erf(x); o[1] = gr_erfc(x); o[2] = gr_exp2(x); o[3] = gr_log2(p); o[4] = gr_sinh(x); o[5] = gr_cosh(x);
        o[6] = gr_tan(x); o[7] = gr_arctan(x); o[8] = gr_arcsin(q); o[9] = gr_arccos(q); o[10] = gr_arctanh(q);
        o[11] = gr_arcsinh(x); o[12] = gr_arccosh(c); o[13] = gr_cbrt(x); o[14] = gr_pow(p, x); o[15] = gr_arctan2(x, p);
    }
    return gr_function(2, ins, 2 * TE_VM2_OUT, outs, NULL);
}
static void te_vm2_arrays(int64_t n, gr_array **a) {
    gr_array *b[4];
    te_vm_arrays(n, b);
    a[0] = b[0]; a[1] = b[2];
    gr_array_free(b[1]); gr_array_free(b[3]);
}
/* output k of te_vm2_fn at x, from the C library's long double functions (the operations before
   the function rounded as the graph rounds them) */
static long double te_vm2_ref(int k, double x, int f32) {
    volatile double xx = f32 ? (double)((float)x * (float)x) : x * x;   /* (no contraction) */
    double p = f32 ? (double)((float)xx + 0.5f) : xx + 0.5, c = f32 ? (double)((float)xx + 1.0f) : xx + 1.0, q = x * 0.25;
    switch (k) {
    case 0: return erfl(x);
    case 1: return erfcl(x);
    case 2: return exp2l(x);
    case 3: return log2l(p);
    case 4: return sinhl(x);
    case 5: return coshl(x);
    case 6: return tanl(x);
    case 7: return atanl(x);
    case 8: return asinl(q);
    case 9: return acosl(q);
    case 10: return atanhl(q);
    case 11: return asinhl(x);
    case 12: return acoshl(c);
    case 13: return cbrtl(x);
    case 14: return powl(p, x);
    default: return atan2l(x, p);
    }
}
/* gr_call's outputs (equal to the emitted file's bit for bit: make test-emit) within 4 ulp of the reference */
static void te_vm2_check(const gr_array *const *in, const gr_array *const *out, int64_t n) {
    int64_t i;
    int d, k;
    for (d = 0; d < 2; d++)
        for (k = 0; k < TE_VM2_OUT; k++)
            for (i = 0; i < n; i++) {
                double x = gr_array_get(in[d], i), got = gr_array_get(out[d * TE_VM2_OUT + k], i);
                long double want = te_vm2_ref(k, x, d);
                double u = d ? gt_ulps(got, (long double)(float)want, 24, -125) : gt_ulps(got, want, 53, -1021);
                CHECK_MSG(u <= 4.0, "%s output %d at x = %.17g (n %ld): %.17g, want %.17Lg (%g ulp)", d ? "float32" : "float64",
                          k, x, (long)n, got, want, u);
            }
}

/* te_vm_fn (the vector math rows in fused groups, blocked): vm.c, and calls of 603 elements (two
   blocks of 256 and 91) and of 13 (one block) recorded as a row of their own */
static void gt_em_vm(const char *dir) {
    static const int64_t sizes[2] = { 603, 13 };
    gr_graph *g = gr_graph_new();
    gr_fn *f = te_vm_fn(g), *f2 = te_vm2_fn(g);
    gr_array *a[4];
    const gr_array *out[2 * TE_VM_OUT + 1];
    int n_rows = 0, n_listed = 0, k, i;
    CHECK_MSG(f != NULL && f2 != NULL, "te_vm_fn: %s", gr_graph_message(g));
    gt_em.row = "vector math rows in fused groups (blocked, float64 and float32)";
    for (k = 0; f && k < 2; k++) {
        te_vm_arrays(sizes[k], a);
        if (k == 0) gt_em_standalone(dir, "vm.c", f, (const gr_array *const *)a, "gr_vm");
        gt_em.test = k ? "13 elements" : "603 elements";
        CHECK_STATUS(gr_call(f, (const gr_array *const *)a, out), GR_OK);
        for (i = 0; i < 4; i++) gr_array_free(a[i]);
    }
    if (f2) {                                /* the second set: erf ... arctan2 */
        const gr_array *out2[2 * TE_VM2_OUT];
        for (k = 0; k < 2; k++) {
            te_vm2_arrays(sizes[k], a);
            gt_em.test = k ? "the second set, 13 elements" : "the second set, 603 elements";
            CHECK_STATUS(gr_call(f2, (const gr_array *const *)a, out2), GR_OK);
            gr_array_free(a[0]); gr_array_free(a[1]);
        }
    }
    gt_em_row_done(&n_rows, &n_listed);
    gr_fn_free(f);
    gr_fn_free(f2);
    gr_graph_free(g);
}

/* the samples, recorded as rows of their own and written as files of their own */
static void gt_em_samples(const char *dir) {
    gr_graph *g = gr_graph_new();
    gr_array *a[4] = { NULL, NULL, NULL, NULL };
    gr_fn *f;
    int i;
    f = gt_em_sample(g, a);
    gt_em_sample_run(dir, "sample.c", "sample (broadcasting, a constant, a cast, a shared variable and its update)", f, a);
    gr_fn_free(f);
    for (i = 0; i < 4; i++) { gr_array_free(a[i]); a[i] = NULL; }
    f = gt_em_w2(g, &a[0]);
    gt_em_sample_run(dir, "w2.c", "W2 (an elementwise cost and its gradient)", f, a);
    gr_fn_free(f);
    for (i = 0; i < 4; i++) { gr_array_free(a[i]); a[i] = NULL; }
    f = gt_em_grad(g, a);
    gt_em_sample_run(dir, "grad.c", "a gradient through broadcasting (tanh(X w + b), mean)", f, a);
    gr_fn_free(f);
    for (i = 0; i < 4; i++) gr_array_free(a[i]);
    gr_graph_free(g);
    gt_em_vm(dir);
}

/* the bench workloads W1 and W4 and the loops (tests/t_emit_work.c), recorded as rows of their own;
   W1 (float64), W4 and the recurrent network's cost and BPTT gradient also as files of their own,
   w1.c, w4.c and loop.c */
static void gt_em_workloads(const char *dir) {
    static const char *const files[4] = { "w1.c", NULL, "w4.c", "loop.c" }, *const names[4] = { "gr_w1", NULL, "gr_w4", "gr_rnn" };
    gt_em_work w;
    const gr_array *out[8];
    int k, r, n_rows = 0, n_listed = 0;
    for (k = 0; (r = gt_em_work_build(k, &w)) != 0; k++) {
        CHECK_MSG(r > 0, "workload %d did not build: %s", k, w.g ? gr_graph_message(w.g) : "");
        if (r > 0 && k < 4 && files[k]) gt_em_standalone(dir, files[k], w.f, (const gr_array *const *)w.in, names[k]);
        if (r > 0) {
            gt_em.row = w.name;
            gt_em.test = "call";
            CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
            gt_em_row_done(&n_rows, &n_listed);
        }
        gt_em_work_free(&w);
    }
}

/* ---- conditionals and ops made of graphs, nested (recorded as rows of their own) -------------------- */

/* Op 'ctl', made of the graph z = ifelse(sum(a) > 0, tanh(a) a, exp(a) - 1) of a (3), applied in
   x, w, v (3): y = ctl(x w); cost = sum(y y) and its gradient in x and w (the op's gradient: an op made
   of a graph holding a conditional); c = ifelse(sum(x) > 1, ctl(x), -x) (the op on one side of a
   conditional); r = the R-op of y in x along v (the op's R-op). */
static gr_fn *gt_em_ctl_op(gr_graph *g, int level, gr_var **xwv) {
    int64_t n3 = 3;
    gr_var *a = gr_tensor(g, GR_F64, 1, &n3, "a"), *th = gr_mul(gr_tanh(a), a), *ex = gr_sub(gr_exp(a), gr_const(g, 1.0)), *z = NULL;
    gr_var *x = gr_tensor(g, GR_F64, 1, &n3, "x"), *w = gr_tensor(g, GR_F64, 1, &n3, "w"), *v = gr_tensor(g, GR_F64, 1, &n3, "v");
    gr_var *xw = gr_mul(x, w), *y = NULL, *yx = NULL, *nx = gr_neg(x), *outs[6], *wrt[2];
    gr_op_def *op;
    gr_fn_opts o;
    gr_fn *f = NULL;
    CHECK_STATUS(gr_ifelse(gr_gt(gr_sum(a), gr_const(g, 0.0)), 1, &th, &ex, &z), GR_OK);
    op = gr_op_from_graph("ctl", 1, &a, 1, &z, NULL);
    CHECK(op != NULL);
    if (!op) return NULL;
    CHECK_STATUS(gr_apply(op, NULL, 0, 1, &xw, &y), GR_OK);
    CHECK_STATUS(gr_apply(op, NULL, 0, 1, &x, &yx), GR_OK);
    outs[0] = y;
    outs[1] = gr_sum(gr_mul(y, y));
    wrt[0] = x; wrt[1] = w;
    CHECK_STATUS(gr_grad(outs[1], 2, wrt, outs + 2, NULL), GR_OK);
    CHECK_STATUS(gr_ifelse(gr_gt(gr_sum(x), gr_const(g, 1.0)), 1, &yx, &nx, &outs[4]), GR_OK);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &outs[5], NULL), GR_OK);
    xwv[0] = x; xwv[1] = w; xwv[2] = v;
    memset(&o, 0, sizeof o);
    o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
    if (outs[2] && outs[3] && outs[4] && outs[5]) f = gr_function(3, xwv, 6, outs, &o);
    CHECK_MSG(f != NULL, "ctl: %s", gr_graph_message(g));
    gr_op_free(op);
    return f;
}
/* the op's graph in plain C: z and dz/da (elementwise) */
static void gt_em_ctl_z(const double *a, double *z, double *dz) {
    int k;
    double s = a[0] + a[1] + a[2];
    for (k = 0; k < 3; k++) {
        z[k] = s > 0 ? tanh(a[k]) * a[k] : exp(a[k]) - 1;
        dz[k] = s > 0 ? a[k] * (1 - tanh(a[k]) * tanh(a[k])) + tanh(a[k]) : exp(a[k]);
    }
}
/* gr_call's values of gt_em_ctl_op against plain C (the conditionals' sides chosen by sum(x w) and sum(x)) */
static void gt_em_ctl_check(const double *x, const double *w, const double *v, const gr_array *const *out) {
    double xw[3], y[3], dy[3], yx[3], dyx[3];
    int k;
    for (k = 0; k < 3; k++) xw[k] = x[k] * w[k];
    gt_em_ctl_z(xw, y, dy);
    gt_em_ctl_z(x, yx, dyx);
    for (k = 0; k < 3; k++) {
        CHECK_NEAR(gr_array_get(out[0], k), y[k], 1e-15);
        CHECK_NEAR(gr_array_get(out[2], k), 2 * y[k] * dy[k] * w[k], 1e-14);
        CHECK_NEAR(gr_array_get(out[3], k), 2 * y[k] * dy[k] * x[k], 1e-14);
        CHECK_NEAR(gr_array_get(out[4], k), x[0] + x[1] + x[2] > 1 ? yx[k] : -x[k], 1e-15);
        CHECK_NEAR(gr_array_get(out[5], k), dy[k] * w[k] * v[k], 1e-14);
    }
    CHECK_NEAR(gr_array_get(out[1], 0), y[0] * y[0] + y[1] * y[1] + y[2] * y[2], 1e-14);
}

/* p (), x (3): t = ifelse(p > 0, ifelse(p > 1, sum(sin(x) x), sum(x x)), sum(exp(x))), cost = t p,
   and its gradient in x and p (the backward pass lazy too: its steps on the sides of the same
   conditions) */
static gr_fn *gt_em_ctl_grad(gr_graph *g, gr_var **xp) {
    int64_t n3 = 3;
    gr_var *x = gr_tensor(g, GR_F64, 1, &n3, "x"), *p = gr_scalar(g, GR_F64, "p");
    gr_var *s1 = gr_sum(gr_mul(gr_sin(x), x)), *s2 = gr_sum(gr_mul(x, x)), *s3 = gr_sum(gr_exp(x)), *in1 = NULL, *t = NULL, *outs[3], *wrt[2];
    CHECK_STATUS(gr_ifelse(gr_gt(p, gr_const(g, 1.0)), 1, &s1, &s2, &in1), GR_OK);
    CHECK_STATUS(gr_ifelse(gr_gt(p, gr_const(g, 0.0)), 1, &in1, &s3, &t), GR_OK);
    outs[0] = gr_mul(t, p);
    wrt[0] = x; wrt[1] = p;
    CHECK_STATUS(gr_grad(outs[0], 2, wrt, outs + 1, NULL), GR_OK);
    xp[0] = x; xp[1] = p;
    return outs[1] && outs[2] ? gr_function(2, xp, 3, outs, NULL) : NULL;
}

/* c (), a (3), b (2): ifelse(c, 2 a, b) + 1, whose sides differ in shape: emitted for the example's
   side; a call taking the other side returns GR_ERR_SHAPE. The case emitted for c = 1 and called
   with c = 0 is recorded with that status. */
static void gt_em_ctl_shapes(gr_graph *g) {
    static const double av[3] = { 1.5, -2, 0.25 }, bv[2] = { 7, -8 };
    int64_t n3 = 3, n2 = 2, k;
    gr_var *c = gr_scalar(g, GR_F64, "c"), *a = gr_tensor(g, GR_F64, 1, &n3, "a"), *b = gr_vector(g, GR_F64, "b");
    gr_var *ta = gr_mul(a, gr_const(g, 2.0)), *y = NULL, *ins[3], *out1;
    gr_array *arr[3], *c0 = gr_array_scalar(GR_F64, 0.0);
    const gr_array *ex[3], *res[1];
    gr_fn *f;
    char *text = NULL, name[32];
    CHECK_STATUS(gr_ifelse(c, 1, &ta, &b, &y), GR_OK);
    out1 = gr_add(y, gr_const(g, 1.0));
    ins[0] = c; ins[1] = a; ins[2] = b;
    f = gr_function(3, ins, 1, &out1, NULL);
    arr[0] = gr_array_scalar(GR_F64, 1.0);
    arr[1] = gr_array_new(GR_F64, 1, &n3);
    arr[2] = gr_array_new(GR_F64, 1, &n2);
    for (k = 0; k < 3; k++) gr_array_set(arr[1], k, av[k]);
    for (k = 0; k < 2; k++) gr_array_set(arr[2], k, bv[k]);
    gt_em.row = "IfElse, sides of different shapes (specialised to the example's side)";
    gt_em.test = "c = 1, then c = 0";
    CHECK(f != NULL);
    if (f) {
        int n_rows = 0, n_listed = 0;
        ex[0] = arr[0]; ex[1] = arr[1]; ex[2] = arr[2];
        if (gr_call(f, ex, res) == GR_OK) for (k = 0; k < 3; k++) CHECK_NEAR(gr_array_get(res[0], k), 2 * av[k] + 1, 0);
        ex[0] = c0;
        if (gr_call(f, ex, res) == GR_OK) for (k = 0; k < 2; k++) CHECK_NEAR(gr_array_get(res[0], k), bv[k] + 1, 0);
        ex[0] = arr[0];                                     /* emitted for c = 1, called with c = 0 */
        snprintf(name, sizeof name, "c%d", gt_em.n_case);
        CHECK_STATUS(gt_em_text(f, ex, name, &text), GR_OK);
        CHECK(text && strstr(text, "return 4;"));
        gt_em.on = 0;
        ex[0] = c0;
        CHECK_STATUS(gr_call(f, ex, res), GR_OK);
        gt_em.on = 1;
        if (text) {
            gt_em_record(f, ex, res, text, name, (int)GR_ERR_SHAPE);
            gt_em.n_case++;
        }
        gt_em_row_done(&n_rows, &n_listed);
    }
    free(text);
    gr_fn_free(f);
    for (k = 0; k < 3; k++) gr_array_free(arr[k]);
    gr_array_free(c0);
}

/* the nested samples: each call recorded (gt_call), rows of their own; the op's function at
   GR_OPT_FULL also as a file of its own, ctl.c */
static void gt_em_ctl(const char *dir) {
    static const double xs[4][3] = { { 0.5, -0.2, 0.9 }, { -0.5, 0.3, -0.4 }, { 0.6, 0.6, 0.3 }, { 0.2, 0.1, 0.3 } };
    static const double ws[4][3] = { { 1.1, 0.7, -0.3 }, { 1, 1, 1 }, { -1, 0.5, -1 }, { 2, 2, 2 } }, v[3] = { 0.3, -0.7, 1.3 };
    static const double ps[4] = { 2, 0.5, -1, 0 };
    gr_graph *g = gr_graph_new();
    gr_var *vars[3];
    gr_array *arr[3];
    const gr_array *out[6];
    int64_t n3 = 3;
    int level, k, i, n_rows = 0, n_listed = 0;
    for (i = 0; i < 3; i++) arr[i] = gr_array_new(GR_F64, 1, &n3);
    for (i = 0; i < 3; i++) gr_array_set(arr[2], i, v[i]);
    for (level = 0; level < 2; level++) {
        gr_fn *f = gt_em_ctl_op(g, level, vars);
        gt_em.row = level ? "an op made of a graph holding a conditional: values, gradient, R-op, on a side (GR_OPT_NONE)"
                          : "an op made of a graph holding a conditional: values, gradient, R-op, on a side";
        gt_em.test = "sides by sum(x w) and sum(x)";
        for (k = 0; f && k < 4; k++) {
            for (i = 0; i < 3; i++) { gr_array_set(arr[0], i, xs[k][i]); gr_array_set(arr[1], i, ws[k][i]); }
            if (k == 0 && level == 0) gt_em_standalone(dir, "ctl.c", f, (const gr_array *const *)arr, "gr_ctl");
            CHECK_STATUS(gr_call(f, (const gr_array *const *)arr, out), GR_OK);
            if (out[0]) gt_em_ctl_check(xs[k], ws[k], v, out);
        }
        if (f) gt_em_row_done(&n_rows, &n_listed);
        gr_fn_free(f);
    }
    {
        gr_fn *f = gt_em_ctl_grad(g, vars);
        gr_array *p = gr_array_scalar(GR_F64, 0);
        CHECK(f != NULL);
        gt_em.row = "a gradient through nested conditionals";
        gt_em.test = "p = 2, 0.5, -1, 0";
        for (i = 0; i < 3; i++) gr_array_set(arr[0], i, xs[0][i]);
        for (k = 0; f && k < 4; k++) {
            const gr_array *in[2];
            const double *x = xs[0];
            double t = 0, want;
            in[0] = arr[0]; in[1] = p;
            gr_array_set(p, 0, ps[k]);
            for (i = 0; i < 3; i++) t += ps[k] > 1 ? sin(x[i]) * x[i] : ps[k] > 0 ? x[i] * x[i] : exp(x[i]);
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            if (!out[0]) continue;
            CHECK_NEAR(gr_array_get(out[0], 0), t * ps[k], 1e-14);
            CHECK_NEAR(gr_array_get(out[2], 0), t, 1e-14);
            for (i = 0; i < 3; i++) {
                want = ps[k] > 1 ? cos(x[i]) * x[i] + sin(x[i]) : ps[k] > 0 ? 2 * x[i] : exp(x[i]);
                CHECK_NEAR(gr_array_get(out[1], i), want * ps[k], 1e-14);
            }
        }
        if (f) gt_em_row_done(&n_rows, &n_listed);
        gr_fn_free(f);
        gr_array_free(p);
    }
    {   /* ifelse(i < 3, x[i], 0) at i = 0..5: lazy in the emitted code too (x[5] would return GR_ERR_RUNTIME) */
        gr_var *x = gr_tensor(g, GR_F64, 1, &n3, "x"), *iv = gr_scalar(g, GR_I64, "i"), *xi = gr_take(x, iv, 0), *zero = gr_const(g, 0.0), *yi = NULL;
        gr_array *ia = gr_array_scalar(GR_I64, 0);
        gr_fn *f;
        CHECK_STATUS(gr_ifelse(gr_lt(iv, gr_const(g, 3.0)), 1, &xi, &zero, &yi), GR_OK);
        vars[0] = x; vars[1] = iv;
        f = gr_function(2, vars, 1, &yi, NULL);
        CHECK(f != NULL);
        gt_em.row = "ifelse(i < 3, x[i], 0): the index read on the side taken only";
        gt_em.test = "i = 0..5";
        for (k = 0; f && k < 6; k++) {
            const gr_array *in[2];
            in[0] = arr[2]; in[1] = ia;
            gr_array_set(ia, 0, (double)k);
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            if (out[0]) CHECK_NEAR(gr_array_get(out[0], 0), k < 3 ? v[k] : 0, 0);
        }
        if (f) gt_em_row_done(&n_rows, &n_listed);
        gr_fn_free(f);
        gr_array_free(ia);
    }
    gt_em_ctl_shapes(g);
    for (i = 0; i < 3; i++) gr_array_free(arr[i]);
    gr_graph_free(g);
}

/* the test binary's main calls this when GT_EMIT_OUT names a directory */
int gt_emit_gen(const char *dir) {
    int i;
    memset(&gt_em, 0, sizeof gt_em);
    gt_em.body = tmpfile();
    gt_em.table = tmpfile();
    if (!gt_em.body || !gt_em.table) { fprintf(stderr, "emit: no temporary file\n"); return 1; }
    gt_em.on = 1;
    gt_em_rows();
    gt_em_samples(dir);
    gt_em_workloads(dir);
    gt_em_ctl(dir);
    gt_em.on = 0;
    CHECK_MSG(gt_em_write_cases(dir), "writing %s/cases.c failed", dir);
    fclose(gt_em.body);
    fclose(gt_em.table);
    for (i = 0; i < gt_em.n_kern; i++) free(gt_em.kern[i]);
    free(gt_em.kern);
    return gt_report("emit-gen");
}

/* ---- the unit tests (every run of the test binary) ------------------------------------------------ */

static gr_status te_twice_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) ((double *)out[0]->data)[i] = 2 * ((const double *)in[0]->data)[i];
    return GR_OK;
}
static gr_status te_acc_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(in[0], in[1]);
    return GR_OK;
}

/* the emission into a string (NULL when it fails) */
static char *te_emit(gr_fn *f, const gr_array *const *ex, const char *name, gr_status want) {
    char *text = NULL;
    CHECK_STATUS(gt_em_text(f, ex, name, &text), want);
    return text;
}

/* a status and a message naming what is wrong, and nothing written */
static void te_refused(gr_fn *f, const gr_array *const *ex, FILE *out, const char *name, gr_status want, const char *needle) {
    gr_emit_opts o;
    long before = out ? ftell(out) : 0;
    o.name = name;
    CHECK_STATUS(gr_fn_emit_c(f, ex, out, &o), want);
    CHECK_CONTAINS(gr_fn_message(f), "gr_fn_emit_c");
    CHECK_CONTAINS(gr_fn_message(f), needle);
    if (out) CHECK(ftell(out) == before);
}

TEST(test_emit_errors) {
    gr_graph *g = gr_graph_new();
    int64_t n3 = 3, s23[2] = { 2, 3 }, n4 = 4;
    gr_var *x = gr_tensor(g, GR_F64, 1, &n3, "x"), *y = gr_exp(x), *u = NULL, *r = NULL, *h0 = gr_scalar(g, GR_F64, "h0");
    gr_array *a3 = gr_array_new(GR_F64, 1, &n3), *a4 = gr_array_new(GR_F64, 1, &n4), *a23 = gr_array_new(GR_F64, 2, s23);
    gr_array *f3 = gr_array_new(GR_F32, 1, &n3);
    gr_fn *f = gr_function(1, &x, 1, &y, NULL), *fu, *fl;
    FILE *out = tmpfile();
    gr_op_def twice;
    gr_scan_seq sq;
    gr_scan_out so;
    const gr_array *ex[1];
    CHECK(f != NULL && out != NULL);
    ex[0] = a3;
    CHECK_STATUS(gr_fn_emit_c(NULL, ex, out, NULL), GR_ERR_VALUE);
    te_refused(f, ex, NULL, NULL, GR_ERR_VALUE, "out is NULL");
    te_refused(f, NULL, out, NULL, GR_ERR_VALUE, "example is NULL");
    te_refused(f, ex, out, "9lives", GR_ERR_VALUE, "not a C identifier");
    te_refused(f, ex, out, "a-b", GR_ERR_VALUE, "not a C identifier");
    te_refused(f, ex, out, "", GR_ERR_VALUE, "not a C identifier");
    ex[0] = f3;
    te_refused(f, ex, out, NULL, GR_ERR_TYPE, "float64");
    ex[0] = a23;
    te_refused(f, ex, out, NULL, GR_ERR_TYPE, "dimensions");
    ex[0] = a4;
    te_refused(f, ex, out, NULL, GR_ERR_SHAPE, "(4)");
    ex[0] = NULL;
    te_refused(f, ex, out, NULL, GR_ERR_VALUE, "example 0");
    memset(&twice, 0, sizeof twice);                    /* a user's op: a C perform cannot be written out */
    twice.name = "Twice"; twice.n_in = 1; twice.n_out = 1; twice.perform = te_twice_perform;
    CHECK_STATUS(gr_apply(&twice, NULL, 0, 1, &x, &u), GR_OK);
    fu = gr_function(1, &x, 1, &u, NULL);
    ex[0] = a3;
    te_refused(fu, ex, out, NULL, GR_ERR_VALUE, "Twice");
    memset(&sq, 0, sizeof sq); memset(&so, 0, sizeof so);   /* a loop of n_steps from an input: its rows depend on the data */
    sq.x = x; so.initial = h0;
    {
        gr_var *ins[3], *nv = gr_scalar(g, GR_I64, "n");
        gr_scan_opts sopt;
        memset(&sopt, 0, sizeof sopt);
        sopt.n_steps = nv;
        sopt.name = "acc";
        CHECK_STATUS(gr_scan(te_acc_step, NULL, 1, &sq, 1, &so, 0, NULL, &sopt, &r), GR_OK);
        ins[0] = x; ins[1] = h0; ins[2] = nv;
        fl = gr_function(3, ins, 1, &r, NULL);
    }
    {
        gr_array *h = gr_array_scalar(GR_F64, 1.0), *na = gr_array_scalar(GR_I64, 2);
        const gr_array *ex2[3];
        ex2[0] = a3; ex2[1] = h; ex2[2] = na;
        te_refused(fl, ex2, out, NULL, GR_ERR_VALUE, "Scan 'acc': its number of steps (n_steps");
        CHECK_CONTAINS(gr_fn_message(fl), "depends on the data");
        gr_array_free(h);
        gr_array_free(na);
    }
    gr_fn_free(fl);
    gr_fn_free(fu);
    gr_fn_free(f);
    if (out) fclose(out);
    gr_array_free(a3); gr_array_free(a4); gr_array_free(a23); gr_array_free(f3);
    gr_graph_free(g);
}

/* the file's form, and gr_call afterwards unchanged (emitting plans for the example's shapes only) */
TEST(test_emit_form) {
    gr_graph *g = gr_graph_new();
    gr_array *arrays[2] = { NULL, NULL };
    gr_fn *f = gt_em_sample(g, arrays);
    char *text = f ? te_emit(f, (const gr_array *const *)arrays, "gr_sample", GR_OK) : NULL;
    const char *p;
    int includes = 0;
    CHECK(text != NULL);
    if (text) {
        for (p = strstr(text, "#include"); p; p = strstr(p + 1, "#include")) includes++;
        CHECK_EQ_INT(includes, 3);
        CHECK_CONTAINS(text, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
        CHECK_CONTAINS(text, "#define gr_sample_WORK_BYTES ");
        CHECK_CONTAINS(text, "int gr_sample(const void *const *inputs, void *const *outputs, void *work) {");
        CHECK_CONTAINS(text, "inputs[0]:  float64 (3,4) \"x\"");
        CHECK_CONTAINS(text, "inputs[1]:  float32 (4) \"h\"");
        CHECK_CONTAINS(text, "outputs[0]: float64 (3,4)");
        CHECK_CONTAINS(text, "outputs[1]: float64 (4)");
        CHECK_CONTAINS(text, "updates gr_sample_s0 in place: float64 (4) \"s\"");
        CHECK_CONTAINS(text, "-0x1.4p+0");                /* the constant's -1.25, bit for bit */
        CHECK_CONTAINS(text, "0x1.0624dd2f1a9fcp-10");    /* the shared variable's 1e-3 */
        CHECK_CONTAINS(text, "static double gr_sample_s0[4]");
        CHECK(strstr(text, "malloc") == NULL && strstr(text, "free(") == NULL);
        CHECK_CONTAINS(text, "gr__m_tanh(");               /* the library's tanh (ops/vmath.c), written as a kernel */
        CHECK_CONTAINS(text, "double gr__m_tanh(double x)");
    }
    free(text);
    if (f) {                                              /* gr_call after emitting: the sample's values */
        const gr_array *out[2];
        double s0 = 0.25;
        CHECK_STATUS(gr_call(f, (const gr_array *const *)arrays, out), GR_OK);
        if (out[0]) CHECK(gr_array_get(out[0], 0) == tanh(sin(1.0) * 0.5 + s0) * 0.5);
        if (out[1]) CHECK(gr_array_get(out[1], 0) == s0 - 1);
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(arrays[0]);
    gr_array_free(arrays[1]);
}

/* conditionals: each side's steps in its block, the else side's after `} else {`; an op made of a graph
   holding a conditional whose sides differ in shape is refused (GR_ERR_SHAPE, naming IfElse and the
   variable: inside it, no example says which side) */
TEST(test_emit_ifelse) {
    gr_graph *g = gr_graph_new();
    int64_t n3 = 3, n2 = 2;
    gr_var *c = gr_scalar(g, GR_F64, "c"), *x = gr_tensor(g, GR_F64, 1, &n3, "x"), *s1 = gr_sum(gr_sin(x)), *s2 = gr_sum(gr_exp(x));
    gr_var *y = NULL, *ins[2], *a = gr_tensor(g, GR_F64, 1, &n3, "a"), *b = gr_tensor(g, GR_F64, 1, &n2, "b"), *z = NULL, *ab[2];
    gr_var *u = gr_tensor(g, GR_F64, 1, &n2, "u"), *xu[2], *r = NULL;
    gr_array *ca = gr_array_scalar(GR_F64, 1.0), *xa = gr_array_new(GR_F64, 1, &n3), *ua = gr_array_new(GR_F64, 1, &n2);
    const gr_array *ex[2];
    gr_op_def *op;
    gr_fn *f, *fo;
    FILE *out = tmpfile();
    char *text;
    CHECK_STATUS(gr_ifelse(c, 1, &s1, &s2, &y), GR_OK);
    ins[0] = c; ins[1] = x;
    f = gr_function(2, ins, 1, &y, NULL);
    ex[0] = ca; ex[1] = xa;
    text = f ? te_emit(f, ex, "gr_cond", GR_OK) : NULL;
    CHECK(text != NULL);
    if (text) {
        const char *then_at = strstr(text, "[0] != 0) {"), *else_at = strstr(text, "} else {");
        /* (the kernels come before; sin(x) and its sum are one fused step, its map kernel's call or a loop) */
        const char *sin_at = then_at ? strstr(then_at, "sin") : NULL, *exp_at = else_at ? strstr(else_at, "exp") : NULL;
        CHECK(then_at && else_at && then_at < else_at);
        CHECK(sin_at && then_at && else_at && sin_at > then_at && sin_at < else_at);
        CHECK(exp_at && else_at && exp_at > else_at);
    }
    free(text);
    ab[0] = a; ab[1] = b;                     /* inside an op made of a graph: sides (3) and (2) */
    CHECK_STATUS(gr_ifelse(gr_gt(gr_sum(a), gr_const(g, 0.0)), 1, &a, &b, &z), GR_OK);
    gr_var_set_name(z, "zz");
    op = gr_op_from_graph("pick", 2, ab, 1, &z, NULL);
    xu[0] = x; xu[1] = u;
    if (op) CHECK_STATUS(gr_apply(op, NULL, 0, 2, xu, &r), GR_OK);
    fo = r ? gr_function(2, xu, 1, &r, NULL) : NULL;
    CHECK(fo != NULL);
    ex[0] = xa; ex[1] = ua;
    if (fo) te_refused(fo, ex, out, NULL, GR_ERR_SHAPE, "IfElse");
    if (fo) CHECK_CONTAINS(gr_fn_message(fo), "zz");
    gr_op_free(op);
    gr_fn_free(fo);
    gr_fn_free(f);
    if (out) fclose(out);
    gr_array_free(ca); gr_array_free(xa); gr_array_free(ua);
    gr_graph_free(g);
}

/* the vector math rows in fused groups (te_vm_fn): written blocked, each map kernel called (where
   the library has them: not under GR_NO_VECTOR_EXTENSIONS), its block buffers inside NAME_WORK_BYTES;
   gr_call's values (equal to the emitted file's bit for bit: make test-emit, row "vector math rows
   in fused groups") against the C library's long double functions, 603 elements and 13 */
TEST(test_emit_vmath) {
    static const char *const maps[] = { "gr__vm_exp_map(", "gr__vm_expm1_map(", "gr__vm_tanh_map(", "gr__vm_log_map(",
                                        "gr__vm_log1p_map(", "gr__vm_sincos_map(", "gr__vm_sigmoid_map(", "gr__vm_softplus_map(", NULL };
    static const int64_t sizes[2] = { 603, 13 };
    gr_graph *g = gr_graph_new();
    gr_fn *f = te_vm_fn(g);
    gr_array *a[4];
    const gr_array *out[2 * TE_VM_OUT + 1];
    int k, i;
    CHECK_MSG(f != NULL, "te_vm_fn: %s", gr_graph_message(g));
    for (k = 0; f && k < 2; k++) {
        char *text;
        te_vm_arrays(sizes[k], a);
        text = te_emit(f, (const gr_array *const *)a, "gr_vm", GR_OK);
        if (text) {
            const char *w = strstr(text, "#define gr_vm_WORK_BYTES "), *q;
            long work = w ? atol(w + 25) : 0, blk = sizes[k] < 256 ? (long)sizes[k] : 256;
            int n_fused = 0;
            for (q = strstr(text, "/* Fused "); q; q = strstr(q + 1, "/* Fused ")) n_fused++;
            CHECK_MSG(n_fused == 2, "%d fused groups, not one per dtype", n_fused);
#ifndef GR_NO_VECTOR_EXTENSIONS
            for (i = 0; maps[i]; i++) CHECK_CONTAINS(text, maps[i]);
            CHECK_CONTAINS(text, "double *w1 = ");          /* (float32's pair: through two double buffers) */
#else
            CHECK(strstr(text, "_map(") == NULL);          /* (no map kernels: element by element) */
#endif
            for (q = strstr(text, " = (double *)((char *)work + "); q; q = strstr(q + 1, " = (double *)((char *)work + "))
                CHECK_MSG(atol(q + 29) + 8 * blk <= work, "a block buffer at %ld beyond gr_vm_WORK_BYTES %ld", atol(q + 29), work);
        }
        free(text);
        CHECK_STATUS(gr_call(f, (const gr_array *const *)a, out), GR_OK);
        te_vm_check((const gr_array *const *)a, out, sizes[k]);
        for (i = 0; i < 4; i++) gr_array_free(a[i]);
    }
    (void)maps;
    gr_fn_free(f);
    gr_graph_free(g);
}

/* the second set (te_vm2_fn): written blocked through their map kernels, pow and arctan2 included
   (where the library has them); gr_call's values (equal to the emitted file's bit for bit: make
   test-emit, the same row) against the C library's long double functions, 603 elements and 13 */
TEST(test_emit_vmath_more) {
    static const char *const maps[] = { "gr__vm_erf_map(", "gr__vm_erfc_map(", "gr__vm_exp2_map(", "gr__vm_log2_map(",
        "gr__vm_sinh_map(", "gr__vm_cosh_map(", "gr__vm_tan_map(", "gr__vm_arctan_map(", "gr__vm_arcsin_map(",
        "gr__vm_arccos_map(", "gr__vm_arctanh_map(", "gr__vm_arcsinh_map(", "gr__vm_arccosh_map(", "gr__vm_cbrt_map(",
        "gr__vm_pow_map((int64_t)n, t", "gr__vm_arctan2_map((int64_t)n, t", "gr__vm_pow_map((int64_t)n, w0, w0, 1, w1, 1);", NULL };
    static const int64_t sizes[2] = { 603, 13 };
    gr_graph *g = gr_graph_new();
    gr_fn *f = te_vm2_fn(g);
    gr_array *a[2];
    const gr_array *out[2 * TE_VM2_OUT];
    int k, i;
    CHECK_MSG(f != NULL, "te_vm2_fn: %s", gr_graph_message(g));
    for (k = 0; f && k < 2; k++) {
        char *text;
        te_vm2_arrays(sizes[k], a);
        text = te_emit(f, (const gr_array *const *)a, "gr_vm2", GR_OK);
        if (text) {
#ifndef GR_NO_VECTOR_EXTENSIONS
            for (i = 0; maps[i]; i++) CHECK_CONTAINS(text, maps[i]);
#else
            CHECK(strstr(text, "_map(") == NULL);
#endif
        }
        free(text);
        CHECK_STATUS(gr_call(f, (const gr_array *const *)a, out), GR_OK);
        te_vm2_check((const gr_array *const *)a, out, sizes[k]);
        for (i = 0; i < 2; i++) gr_array_free(a[i]);
    }
    (void)maps;
    gr_fn_free(f);
    gr_graph_free(g);
}

SUITE(suite_emit) = {
    CASE(test_emit_errors),
    CASE(test_emit_form),
    CASE(test_emit_ifelse),
    CASE(test_emit_vmath),
    CASE(test_emit_vmath_more),
    END_SUITE
};
