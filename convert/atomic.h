/* atomic.h: how files are written so that a partial one never carries its final name: a
 * temporary file in the destination folder, synced, then renamed over the final name; removed
 * on any failure or on SIGINT/SIGTERM/SIGHUP. For convert's OUT (docs/convert.md) also: a set
 * of files renamed together with the container last, the lock on OUT, the removal of the
 * temporary files a killed run left, and the sparse, bounded copy of side files. */
#ifndef HC_ATOMIC_H
#define HC_ATOMIC_H

#include <stdbool.h>

#include "base.h"
#include "checkpoint.h"
#include "hconvert.h"

/* Temporary names: "." + final name + mark + 6 characters of [A-Za-z0-9] (mkostemp). Files of
 * an output folder carry the OUT mark, which only they use, so that a later run can tell its
 * own leftovers from anything else; other atomic files (dequant's .npy) carry ".tmp-". */
#define HC_OUT_TMP_MARK ".hconvert-tmp-"
#define HC_OUT_LOCK_FILE ".hconvert.lock"
/* Side files (tokenizer, configs) larger than this are refused unless the options say more. */
#define HC_SIDE_FILE_LIMIT_DEFAULT (4ull << 30)

/* Test hook, set explicitly (never from the environment): every write made through a file
 * that carries it is counted, and the fail_at-th (1-based; 0: none) fails with ENOSPC as a
 * full disk would. Counted atomically: parallel writers may share one. */
typedef struct hc_fault {
    uint64_t fail_at;
    uint64_t writes;
} hc_fault;

typedef struct {
    char *final_path;
    char *tmp_path;
    int fd;
    int slot;        /* registration for signal cleanup */
    hc_fault *fault; /* NULL: none */
} hc_atomic_file;

hc_status hc__atomic_open(hc_atomic_file *af, const char *final_path, hc_err *err);
/* The same for a file of convert's output folder: the OUT mark, and writes count on fault. */
hc_status hc__out_open(hc_atomic_file *af, const char *final_path, hc_fault *fault, hc_err *err);
/* pwrite of exactly n bytes at off into the temporary file (the fault hook applies). */
hc_status hc__atomic_write(hc_atomic_file *af, const void *buf, size_t n, uint64_t off,
                          hc_err *err);
/* fsync, rename to the final name, fsync the folder. Closes the file. */
hc_status hc__atomic_commit(hc_atomic_file *af, hc_err *err);
/* Closes and unlinks the temporary file; safe after commit or a failed open. */
void hc__atomic_abort(hc_atomic_file *af);
/* Copies the regular file src (opened without blocking: a FIFO or device is refused) into
 * af, which hc__atomic_open/hc__out_open made: sparsely (holes and all-zero blocks are not
 * written; the length is set at the end) and refused, naming src and the limit, when larger
 * than max_size bytes. af stays open for commit or hc__atomic_set_add. */
hc_status hc__atomic_copy(hc_atomic_file *af, const char *src, uint64_t max_size,
                         const hc_file_id *expect, hc_err *err);

/* Files written and synced under their temporary names, renamed together by commit. */
typedef struct {
    char *tmp_path, *final_path;
    int slot;
    bool last;    /* the mark of a complete folder (the container): renamed after the rest */
    bool renamed; /* by the commit in progress */
    uint64_t size;
} hc_atomic_entry;

typedef struct hc_atomic_set {
    hc_atomic_entry *v;
    size_t n, cap;
} hc_atomic_set;

/* Syncs and closes af and moves it into the set (af is left empty); aborts af on failure. */
hc_status hc__atomic_set_add(hc_atomic_set *s, hc_atomic_file *af, bool last, hc_err *err);
/* Removes the existing final files of the `last` entries, renames the others, then the `last`
 * ones, and syncs the folders: a folder that holds its container again is complete. On a
 * failure the files this commit renamed are removed too. The set is emptied either way. */
hc_status hc__atomic_set_commit(hc_atomic_set *s, hc_err *err);
/* Unlinks every temporary file still in the set and empties it. */
void hc__atomic_set_abort(hc_atomic_set *s);

/* Takes OUT's lock (dir/.hconvert.lock, flock, not waiting), held until hc__out_unlock or the
 * process ends. Another holder: HC_IO at once, naming dir. The lock file stays. */
hc_status hc__out_lock(const char *dir, int *fd, hc_err *err);
void hc__out_unlock(int fd); /* accepts -1 */
/* With the lock held: removes, in dir and in its rank<N> folders, the regular files named as
 * our temporary files are (OUT mark, or the ".model.hconvert.tmp-XXXXXX" of earlier versions);
 * *removed counts them. */
hc_status hc__out_clean_stale(const char *dir, size_t *removed, hc_err *err);
/* Removes the containers of an earlier run into OUT that a run with tp ranks does not replace
 * (OUT/model.hconvert when tp > 1; OUT/rank<N>/model.hconvert for N >= tp, every rank's when
 * tp is 1), so OUT never holds two models; *removed counts them. Call with OUT's lock held. */
hc_status hc__out_drop_other_ranks(const char *dir, unsigned tp, size_t *removed, hc_err *err);
/* Whether name is one of our temporary names (the pattern hc__out_clean_stale removes). */
bool hc__out_is_tmp_name(const char *name);

/* The converter's output options (internal: tests set them; the public API has no parameter
 * for them yet). */
typedef struct {
    uint64_t side_file_limit; /* bytes; a larger side file is refused */
    hc_fault *fault;          /* test hook for every file written into OUT; NULL: none */
} hc_out_options;
hc_out_options *hc__converter_out_options(hc_converter *c);

#endif
