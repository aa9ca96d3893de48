/* scheme_int.h: what model.c and the scheme resolvers (scheme_*.c) share: reading typed
 * config fields, matching module names against config patterns under one work budget, and
 * one resolver per quant_method. Internal to formats/; other folders use quant.h. */
#ifndef HC_SCHEME_INT_H
#define HC_SCHEME_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "pyregex.h"
#include "quant.h"

/* ---- typed config fields (scheme_fields.c) ---- */

/* An integer config value: dflt when absent or null, HC_BAD_NUM when not an integer in range
 * (the decoder's scheme check then refuses the module with a finding). */
#define HC_BAD_NUM INT64_MIN
int64_t hc__cfg_num(const cJSON *v, int64_t dflt);

/* JSON types a configuration field may take. */
enum { T_NULL = 1, T_BOOL = 2, T_NUM = 4, T_STR = 8, T_ARR = 16, T_OBJ = 32 };

/* A configuration field of a type its reader cannot take (an array where an object of
 * overrides belongs, "false" as a string where a boolean does): a finding naming the field
 * and the type it must have. True when the field is absent or of an allowed type. */
bool hc__cfg_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                   unsigned ok, const char *want);
/* hc__cfg_typed for the field key of obj, its path prefix + key. */
bool hc__cfg_field_typed(hc_findings *f, const char *cfgname, const char *prefix,
                         const cJSON *obj, const char *key, unsigned ok, const char *want);
/* A list whose entries are all strings (targets, ignore). */
bool hc__cfg_strings_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                           unsigned ok);

/* ---- module-name patterns (scheme_patterns.c) ---- */

/* All pattern matching of one model open shares one budget of NFA state visits (compiling a
 * pattern costs its states too): a config of hostile patterns (`(?:.?){2040}Q` x 100 on 1,000
 * modules took 67 s before) ends in a finding instead. An honest config needs a small part:
 * 100,000 module names x 10 patterns spend about 4e7, a fifth (docs/regex.md). */
#define HC_REGEX_BUDGET 200000000ull

typedef struct {
    uint64_t budget; /* NFA state visits left */
    size_t retained; /* bytes of the patterns kept */
} re_work;

/* The compiled patterns of one list (ignore, a group's targets, dynamic), by entry index;
 * NULL until first used, or when not kept. */
typedef struct {
    hc_pyre **re;
    size_t n;
} pat_list;

bool hc__pat_list_init(pat_list *pl, const cJSON *list);
void hc__pat_list_free(pat_list *pl);
/* Entry j of pl (pattern text pattern) on name: 1, 0, -1 refused, HC_PYRE_OVER_BUDGET. */
int hc__pat_run(re_work *w, pat_list *pl, size_t j, const char *pattern, const char *name,
                char *msg, unsigned msg_len);
/* A pattern that gives no answer: refused (rule, e.g. "ignore pattern"), or the budget ran out
 * at it ("regex work"). entry is its path, field the list's. */
void hc__pattern_finding(hc_findings *f, const char *rule, const char *field, const char *entry,
                         const char *pattern, int r, const char *msg);

/* ---- one resolver per quant_method: sets the schemes of the modules its config describes;
 * what it refuses becomes md->config_findings ---- */

void hc__resolve_ct(hc_model *md, const cJSON *qc, const char *cfgname);   /* scheme_ct.c */
void hc__resolve_gptq(hc_model *md, const cJSON *qc, const char *cfgname); /* scheme_gptq.c */
void hc__resolve_awq(hc_model *md, const cJSON *qc, const char *cfgname);  /* scheme_gptq.c */
void hc__resolve_gptoss(hc_model *md);                                     /* scheme_float.c */
void hc__resolve_fp8(hc_model *md, const cJSON *qc, const char *cfgname);  /* scheme_float.c */

#endif
