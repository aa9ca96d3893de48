/* atomic.h: atomic file creation: a temporary file in the destination folder, renamed over
 * the final name only after fsync; removed on any failure or on SIGINT/SIGTERM/SIGHUP. */
#ifndef HC_ATOMIC_H
#define HC_ATOMIC_H

#include "base.h"

typedef struct {
    char *final_path;
    char *tmp_path;
    int fd;
    int slot; /* registration for signal cleanup */
} hc_atomic_file;

hc_status hc_atomic_open(hc_atomic_file *af, const char *final_path, hc_err *err);
/* fsync, rename to the final name, fsync the folder. Closes the file. */
hc_status hc_atomic_commit(hc_atomic_file *af, hc_err *err);
/* Closes and unlinks the temporary file; safe after commit or a failed open. */
void hc_atomic_abort(hc_atomic_file *af);
/* Copies src into final_path atomically. */
hc_status hc_atomic_copy(const char *src, const char *final_path, hc_err *err);

#endif
