/* checkpoint_archive.c: an archive opened as a checkpoint: extracted (archive.c, within the
 * limits of hc_ckpt_opts) into a private folder that hc__ckpt_close removes; the checkpoint is
 * the folder inside it that holds files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "checkpoint_int.h"

/* After extraction the checkpoint is the first folder that holds files, descending through
 * folders that hold exactly one folder and nothing else. Hidden names (macOS tar's "._x"
 * files; folders list no hidden file either) and zip's __MACOSX folder do not count. */
static hc_status find_archive_root(hc_ckpt *c, hc_err *err) {
    for (int depth = 0; depth < 8; depth++) {
        DIR *d = opendir(c->root);
        if (!d) return hc__fail(err, HC_IO, "cannot open '%s': %s", c->root, strerror(errno));
        struct dirent *de;
        int files = 0, dirs = 0;
        char sub[256] = "";
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.' || !strcmp(de->d_name, "__MACOSX")) continue;
            struct stat sb;
            if (de->d_type == DT_DIR ||
                (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &sb,
                                                     AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(sb.st_mode))) {
                dirs++;
                snprintf(sub, sizeof sub, "%s", de->d_name);
            } else files++;
        }
        closedir(d);
        if (files > 0 || dirs != 1) return HC_OK;
        char *next = hc__asprintf("%s/%s", c->root, sub);
        if (!next) return hc__fail(err, HC_NOMEM, "out of memory");
        free(c->root);
        c->root = next;
    }
    return HC_OK;
}

/* Extracts src into a new folder under $TMPDIR (c->tmpdir) and points c->root at the
 * checkpoint inside it. */
hc_status hc__ck_extract(hc_ckpt *c, const char *src, const hc_ckpt_opts *o, hc_err *err) {
    c->is_archive = 1;
    const char *tmp = getenv("TMPDIR");
    c->tmpdir = hc__asprintf("%s/hconvert-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!c->tmpdir || !mkdtemp(c->tmpdir)) {
        hc_status st = hc__fail(err, HC_IO, "cannot create a temporary folder: %s", strerror(errno));
        free(c->tmpdir);
        c->tmpdir = NULL;
        return st;
    }
    c->root = hc__strdup(c->tmpdir);
    hc_status st = hc__archive_extract(src, c->tmpdir, o, err);
    if (!st) st = find_archive_root(c, err);
    return st;
}
