// counter_delta() is inline in the header: it runs once per counter per sample (~640 on a DGX) and a
// call returning an optional through memory cost more than its few compares.
#include "libstallscope/model/counter_delta.h"
