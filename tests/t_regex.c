/* t_regex.c: the Python re subset of formats/pyregex.c against hand-worked matches. */
#include "test.h"

void suite_regex(void) {
}
