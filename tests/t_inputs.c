/* t_inputs.c: folder and archive inputs: names, limits, links and non-regular files. */
#include "test.h"

void suite_inputs(void) {
}
