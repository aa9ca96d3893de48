/* t_faults.c: convert under faults: stale temp files, a lock on OUT, failures while writing. */
#include "test.h"

void suite_faults(void) {
}
