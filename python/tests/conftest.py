import pathlib
import sys

# The package from this source tree (its library: $KFUSE_LIBRARY, which the
# ctest entry sets, else the tree's build/).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
