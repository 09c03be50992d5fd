# lit configuration for kfuse's FileCheck tests.
import os

import lit.formats

config.name = "kfuse"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kfuse_binary_dir, "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.kfuse_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
config.substitutions.append(("%examples", os.path.join(config.kfuse_source_dir, "examples")))
