/* tests/ops.c: runs the cases of every row of the op tables (tests/ops.h), in the tables' order.
   The lists of rows are expanded from GR_ELEMWISE_OPS and GR_STRUCT_OPS: each names the row's
   cases, gt_ew_<name> or gt_cases_<Name>, which the family's test file defines, so a row without
   them does not link. */
#include "ops.h"

/* ---- the rows, from the tables ------------------------------------------------------------------- */

#define GT_EW_DECL(name, ...) extern const gt_ew gt_ew_##name;
GR_ELEMWISE_OPS(GT_EW_DECL)
#undef GT_EW_DECL
#define GT_ST_DECL(Name, ...) extern const gt_opcase gt_cases_##Name[];
GR_STRUCT_OPS(GT_ST_DECL)
#undef GT_ST_DECL

#define GTE_B_1(name) gr_##name, NULL, NULL
#define GTE_B_2(name) NULL, gr_##name, NULL
#define GTE_B_3(name) NULL, NULL, gr_##name
#define GT_EW_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) { #name, arity, GTE_##cls, GTE_B_##arity(name), &gt_ew_##name },
static const gte_row gt_ew_rows[] = { GR_ELEMWISE_OPS(GT_EW_ROW) };
#undef GT_EW_ROW
#define GT_N_EW ((int)(sizeof gt_ew_rows / sizeof gt_ew_rows[0]))

const gte_row *gte_row_of(const char *name) {
    int r;
    for (r = 0; r < GT_N_EW; r++) if (strcmp(gt_ew_rows[r].name, name) == 0) return &gt_ew_rows[r];
    return NULL;
}

typedef struct gt_st_row { const char *name; const gt_opcase *cases; } gt_st_row;
#define GT_ST_ROW(Name, ...) { #Name, gt_cases_##Name },
static const gt_st_row gt_st_rows[] = { GR_STRUCT_OPS(GT_ST_ROW) };
#undef GT_ST_ROW
#define GT_N_ST ((int)(sizeof gt_st_rows / sizeof gt_st_rows[0]))

static const gt_opcase *gt_st_cases(const char *name) {
    int r;
    for (r = 0; r < GT_N_ST; r++) if (strcmp(gt_st_rows[r].name, name) == 0) return gt_st_rows[r].cases;
    return NULL;
}

/* a spec list: at least one spec, each naming the row */
static void gt_check_specs(const char *row, const gtd_spec *specs) {
    int k;
    CHECK_MSG(specs && specs[0].row, "row %s has no derivative spec", row);
    for (k = 0; specs && specs[k].row; k++)
        CHECK_MSG(strcmp(specs[k].row, row) == 0, "spec \"%s\" of row %s's list names the row %s", specs[k].label, row, specs[k].row);
}

/* every row has each kind of case (tests/ops.h) */
TEST(test_ops_rows_complete) {
    int r, k;
    CHECK(GT_N_EW > 40);
    CHECK(GT_N_ST > 40);
    for (r = 0; r < GT_N_EW; r++) {
        const gte_row *row = &gt_ew_rows[r];
        CHECK_MSG((row->arity == 1 && row->b1) || (row->arity == 2 && row->b2) || (row->arity == 3 && row->b3),
                  "row %s has arity %d", row->name, row->arity);
        CHECK_MSG(row->cases->f != NULL, "elementwise row %s has no float reference", row->name);
        CHECK_MSG(row->cls == GTE_FLOAT || row->cases->i != NULL, "elementwise row %s has no integer reference", row->name);
        gt_check_specs(row->name, row->cases->specs);
        for (k = 0; row->cases->more && row->cases->more[k].kind; k++)
            CHECK_MSG(row->cases->more[k].fn != NULL && row->cases->more[k].kind != GT_K_SPECS,
                      "a further case of elementwise row %s is not a test", row->name);
    }
    for (r = 0; r < GT_N_ST; r++) {
        const gt_opcase *c = gt_st_rows[r].cases;
        const char *name = gt_st_rows[r].name;
        int n[GT_K_NO_ERRORS + 1];
        memset(n, 0, sizeof n);
        for (k = 0; c[k].kind; k++) {
            n[c[k].kind]++;
            if (c[k].kind == GT_K_SPECS) gt_check_specs(name, c[k].specs);
            if (c[k].kind == GT_K_VALUES || c[k].kind == GT_K_DERIVS || c[k].kind == GT_K_ERRORS)
                CHECK_MSG(c[k].fn != NULL, "case %s of row %s has no test", c[k].name, name);
            if (c[k].kind == GT_K_NO_ERRORS) CHECK_MSG(c[k].name && c[k].name[0], "row %s says no errors without a reason", name);
            if (c[k].kind == GT_K_ERRORS_WITH) {
                const gt_opcase *w = gt_st_cases(c[k].name);
                int j, has = 0;
                for (j = 0; w && w[j].kind; j++) has |= w[j].kind == GT_K_ERRORS;
                CHECK_MSG(has, "row %s has its errors with %s, which has none", name, c[k].name);
            }
        }
        CHECK_MSG(n[GT_K_VALUES] > 0, "row %s has no values case", name);
        CHECK_MSG(n[GT_K_SPECS] > 0, "row %s has no derivative specs", name);
        CHECK_MSG((n[GT_K_ERRORS] > 0) + (n[GT_K_ERRORS_WITH] > 0) + (n[GT_K_NO_ERRORS] > 0) == 1,
                  "row %s needs errors cases, or GT_ERRORS_WITH, or GT_NO_ERRORS (one of them)", name);
    }
}

/* ---- running them ----------------------------------------------------------------------------------- */

static const gte_row *gt_ew_now;
static const gtd_spec *gt_specs_now;
static void gt_ew_values(void) { gte_values(gt_ew_now); }
static void gt_ew_errors(void) { gte_errors(gt_ew_now); }
static void gt_specs(void) { gtd_run_specs(gt_specs_now); }

/* one case of a row, as the test "row: case" */
static void gt_run_case(const char *row, const char *what, gt_fn fn) {
    char name[160];
    snprintf(name, sizeof name, "%s: %s", row, what);
    gt_run1(name, fn);
}

void gt_run_ops(void) {
    int r, k;
    gt_run1("test_ops_rows_complete", test_ops_rows_complete);
    for (r = 0; r < GT_N_EW; r++) {
        const gte_row *row = gt_ew_now = &gt_ew_rows[r];
        gt_run_case(row->name, "values", gt_ew_values);
        gt_specs_now = row->cases->specs;
        gt_run_case(row->name, "derivative specs", gt_specs);
        gt_run_case(row->name, "errors", gt_ew_errors);
        for (k = 0; row->cases->more && row->cases->more[k].kind; k++)
            gt_run_case(row->name, row->cases->more[k].name, row->cases->more[k].fn);
    }
    for (r = 0; r < GT_N_ST; r++) {
        const gt_opcase *c = gt_st_rows[r].cases;
        for (k = 0; c[k].kind; k++) {
            if (c[k].kind == GT_K_SPECS) {
                gt_specs_now = c[k].specs;
                gt_run_case(gt_st_rows[r].name, c[k].name, gt_specs);
            } else if (c[k].fn)
                gt_run_case(gt_st_rows[r].name, c[k].name, c[k].fn);
        }
    }
}
