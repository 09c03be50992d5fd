// A header of the lowest layer that includes the highest: the layering
// check must fail on this tree.
#include "compiler/CompileGraph.h"
