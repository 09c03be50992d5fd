// ERROR: garbage.mlir:2:1 | unexpected character
\x00\x01 this is not MLIR at all { ] ) %%% 
